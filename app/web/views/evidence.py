"""A finding's evidence as a person reads it: worded labels with units, values in words.

The domain keeps evidence as `snake_case` keys and plain values (the API returns them so);
the page words each key from the catalog (`evidence.<key>`), says a boolean as a word, a
moment as a `<time>`, a share with at most two decimals, and leaves out a `<name>_s` count
of seconds when `<name>` already says the same duration in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from markupsafe import Markup

from app.domain.kube_time import parse_time
from app.domain.snapshot import Finding
from app.i18n.coded import coded_markup
from app.i18n.translate import CATALOGS, Translator
from app.web.views.times import when

EvidenceRow = tuple[str, Markup | str, bool]  # label, value, label is a name (code)


def evidence_rows(item: Finding, lang: str) -> list[EvidenceRow]:
    """The rows of `item`'s evidence table, in `lang`."""
    t = Translator(lang)
    evidence: Mapping[str, object] = item.evidence
    rows: list[EvidenceRow] = []
    for name, value in evidence.items():
        if name.endswith("_s") and name[:-2] in evidence:
            continue  # the same duration, already said in words
        label = CATALOGS[lang].get(f"evidence.{name}")
        rows.append((label or name, _value(value, t), label is None))
    return rows


def _value(value: object, t: Translator) -> Markup | str:
    if value is None:
        return t("unknown_value")
    if isinstance(value, bool):
        return t("value_yes") if value else t("value_no")
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, str) and _is_moment(value):
        return when(value)
    return coded_markup(value, t.lang)


def _is_moment(text: str) -> bool:
    """An RFC 3339 timestamp (never a number or a name that happens to parse)."""
    return (
        len(text) >= 20
        and text[4] == "-"
        and "T" in text
        and isinstance(parse_time(text), datetime)
    )
