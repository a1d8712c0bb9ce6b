"""A refused change in the reader's language, from the gettext catalogs.

The domain raises `PlanRefused(code, why, **params)`; the sentence is `refused.<why>` filled
with the params. A param holding `Phrase`s (what moved since a preview) is worded as their
`phrase.<code>` sentences joined by "; "; a `count` param picks the plural form. Every
`why`, the domain's and the web services', has a catalog id (tests/web/test_refusal_words.py);
one without would be shown as it is.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from app.domain.changes.durable import UnreadableRecord
from app.domain.changes.models import Phrase, PlanRefused
from app.i18n.coded import coded_markup, coded_text
from app.i18n.translate import CATALOGS, DEFAULT_LANGUAGE, message_for
from app.web.views.change_words import unreadable_text

# Params that quote the plugin's own words (its config parser's error, why a path does not
# resolve): codes (app.domain.coded) worded in the reader's language, and on pages the
# plugin's own English beside them in <code> (i18n/coded.py).
EVIDENCE = ("error", "reason")


def _value(value: object, lang: str) -> object:
    if isinstance(value, tuple) and value and all(isinstance(v, Phrase) for v in value):
        return "; ".join(CATALOGS[lang][f"phrase.{p.code}"].format(**p.params) for p in value)
    if isinstance(value, UnreadableRecord):
        return unreadable_text(value, lang)
    if isinstance(value, str):
        return coded_text(value, lang)
    return value


def refusal_text(refused: PlanRefused, lang: str = DEFAULT_LANGUAGE) -> str:
    """Why the change was refused, in `lang`."""
    template = message_for(lang, f"refused.{refused.why}", refused.params.get("count"))
    if template is None:
        return refused.why
    return template.format(**{k: _value(v, lang) for k, v in refused.params.items()})


def refusal_markup(refused: PlanRefused, lang: str) -> Markup:
    """`refusal_text` for a page: the quoted evidence in <code>, everything else escaped."""
    template = message_for(lang, f"refused.{refused.why}", refused.params.get("count"))
    if template is None:
        return escape(refused.why)
    params = {
        name: coded_markup(value, lang) if name in EVIDENCE else _value(value, lang)
        for name, value in refused.params.items()
    }
    return escape(template).format(**params)


def change_instead(refused: PlanRefused, lang: str = DEFAULT_LANGUAGE) -> str:
    """What to change instead: the objects the refusal names, else its code's words."""
    named = "; ".join(refused.details)
    words = CATALOGS[lang].get(f"gpus_instead_{refused.code.value}", "")
    return named or words.format(**{k: v for k, v in refused.params.items() if k != "details"})
