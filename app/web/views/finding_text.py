"""Finding titles and remedy explanations in the page's language, from the message catalogs.

English titles are the domain's own; Korean ones are worded from `Finding.params`. A code the
catalog does not know yet (a new rule) keeps the domain's title, so nothing shows blank.
"""

from __future__ import annotations

import string

from app.domain.findings.catalogue import CATALOGUE
from app.domain.findings.usage import duration_text
from app.domain.snapshot import Finding
from app.web.i18n.catalog_findings_en import FINDINGS_EN
from app.web.i18n.catalog_findings_ko import FINDINGS_KO

_FORMATTER = string.Formatter()


def _fill(template: str, params: dict[str, object]) -> str | None:
    """`template` with `params`, or None when one of its placeholders has no value."""
    names = [name for _, name, _, _ in _FORMATTER.parse(template) if name]
    if any(params.get(name) is None for name in names):
        return None
    return template.format(**{name: params[name] for name in names})


def duration_ko(seconds: float) -> str:
    """A duration in Korean: `35초`, `42분`, `1시간 5분`."""
    return duration_text(seconds, units=("초", "분", "시간"))


def _ko_params(item: Finding) -> dict[str, object]:
    """The finding's params, durations worded in Korean where the seconds are known."""
    params: dict[str, object] = dict(item.params)
    for name in ("idle_for", "low_for"):
        seconds = params.get(f"{name}_s")
        if isinstance(seconds, int | float):
            params[name] = duration_ko(seconds)
    return params


def finding_title(item: Finding, lang: str) -> str:
    if lang == "ko" and item.code in FINDINGS_KO:
        summary, template, _ = FINDINGS_KO[item.code]
        return _fill(template, _ko_params(item)) or summary
    return item.title


def finding_summary(code: str, lang: str) -> str:
    """The one-line meaning of a code (docs and filters)."""
    if lang == "ko" and code in FINDINGS_KO:
        return FINDINGS_KO[code][0]
    kind = CATALOGUE.get(code)
    return kind.summary if kind is not None else code


def finding_explanation(code: str, lang: str) -> str | None:
    """What to do about a code, in words, above the copyable command."""
    if lang == "ko" and code in FINDINGS_KO:
        return FINDINGS_KO[code][2]
    return FINDINGS_EN.get(code)
