"""Coded messages of the domain (`plugin.*`, `quantity.*`: app.domain.coded), worded.

Most of them stand for what the device plugin or Kubernetes itself says of an input it refuses;
the English catalog reproduces that upstream message word for word, so English is the evidence
an admin greps for in the plugin's log. A Korean reader gets the Korean sentence and, on pages,
the upstream English beside it in <code>. A text that is no code (an old record, a plain
value) is shown as it is; so is a code whose params do not fit its message (a forged record).
`upstream_text` is that English alone: the pages' <code>, and app.upstream's logs and Events.
"""

from __future__ import annotations

from collections.abc import Mapping

from markupsafe import Markup, escape

from app.domain.coded import Coded, parse_coded
from app.i18n.translate import CATALOGS, DEFAULT_LANGUAGE

UPSTREAM_LANGUAGE = "en"


def _worded(coded: Coded, lang: str, depth: int = 0) -> str | None:
    template = CATALOGS[lang].get(coded.code)
    if template is None or depth > 3:
        return None
    params = {
        name: (_worded(inner, lang, depth + 1) or value)
        if (inner := parse_coded(value)) is not None
        else value
        for name, value in coded.params.items()
    }
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError, AttributeError):
        return None


def coded_text(text: object, lang: str = DEFAULT_LANGUAGE) -> str:
    """`text` worded in `lang` when it is a known code, else `text` as it is."""
    coded = parse_coded(text)
    worded = _worded(coded, lang) if coded is not None else None
    return worded if worded is not None else str(text)


def upstream_text(text: object) -> str:
    """The upstream (English) wording: what the plugin logs, for logs and for grepping."""
    return coded_text(text, UPSTREAM_LANGUAGE)


def coded_markup(text: object, lang: str) -> Markup:
    """For a page: the upstream English in <code>, after the reader's sentence when it differs."""
    upstream = Markup("<code>{}</code>").format(upstream_text(text))
    coded = parse_coded(text)
    own = _worded(coded, lang) if coded is not None and lang != UPSTREAM_LANGUAGE else None
    if own is None or own == upstream_text(text):
        return upstream
    return escape(own) + Markup(" (") + upstream + Markup(")")


def worded_values(values: Mapping[str, object], lang: str = DEFAULT_LANGUAGE) -> dict[str, object]:
    """A mapping (a finding's evidence) with every coded value worded in `lang`."""
    return {
        name: coded_text(value, lang) if parse_coded(value) is not None else value
        for name, value in values.items()
    }
