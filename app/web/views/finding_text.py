"""Finding titles and remedy explanations in the page's language, from the gettext catalogs.

The domain emits a code and `params`; the catalog of each language holds, per code,
`finding.<code>.summary`, `finding.<code>.title` (a template over the params; a rule that
has several titles sets `params["variant"]`, worded by `finding.<code>.title.<variant>`)
and `finding.<code>.remedy` (what to do, in words, above the copyable command). A remedy
carries its command and a `remedy_code`: `remedy.<code>` words what to do with that command
as its `# ...` comment, so the box stays one pasteable line in the page's language.
A title whose placeholder a finding lacks falls back to the summary, so nothing shows blank.
"""

from __future__ import annotations

import string
from collections.abc import Mapping

from app.domain.findings.shell import one_line
from app.domain.findings.usage import duration_text
from app.domain.snapshot import Finding
from app.i18n.coded import worded_values
from app.i18n.translate import CATALOGS, message_for
from app.web.views.links import remedy_links

_FORMATTER = string.Formatter()
_DURATION_UNITS = {"en": (" s", " min", " h"), "ko": ("초", "분", "시간")}


def placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in _FORMATTER.parse(template) if name]


def _fill(template: str, params: dict[str, object]) -> str | None:
    """`template` with `params`, or None when one of its placeholders has no value."""
    names = placeholders(template)
    if any(params.get(name) is None for name in names):
        return None
    return template.format(**{name: params[name] for name in names})


def duration_ko(seconds: float) -> str:
    """A duration in Korean: `35초`, `42분`, `1시간 5분`."""
    return duration_text(seconds, units=_DURATION_UNITS["ko"])


def _params(item: Finding, lang: str) -> dict[str, object]:
    """The finding's params, durations and coded values (a plugin's refusal) worded in `lang`."""
    params: dict[str, object] = worded_values(item.params, lang)
    for name in ("idle_for", "low_for"):
        seconds = params.get(f"{name}_s")
        if isinstance(seconds, int | float):
            params[name] = duration_text(seconds, units=_DURATION_UNITS[lang])
    if item.code == "gpu-demand-pending" and isinstance(params.get("reason"), str):
        params["reason"] = demand_reason(params, lang)
    return params


def demand_reason(params: Mapping[str, object], lang: str) -> str:
    """Why pending pods cannot fit, worded from the reason's code (`demand.<code>`)."""
    template = CATALOGS[lang].get(f"demand.{params.get('reason')}")
    if template is None:
        return str(params.get("reason"))
    return _fill(template, dict(params)) or str(params.get("reason"))


def title_key(item: Finding) -> str:
    """The catalog id of the finding's title: its variant's when the catalog has one."""
    variant = item.params.get("variant")
    key = f"finding.{item.code}.title"
    if isinstance(variant, str) and f"{key}.{variant}" in CATALOGS["en"]:
        return f"{key}.{variant}"
    return key


def finding_title(item: Finding, lang: str) -> str:
    template = message_for(lang, title_key(item), item.params.get("count"))
    filled = _fill(template, _params(item, lang)) if template else None
    return filled or finding_summary(item.code, lang)


def finding_summary(code: str, lang: str) -> str:
    """The one-line meaning of a code (docs and filters)."""
    return CATALOGS[lang].get(f"finding.{code}.summary", code)


def finding_explanation(code: str, lang: str) -> str | None:
    """What to do about a code, in words, above the copyable command."""
    return CATALOGS[lang].get(f"finding.{code}.remedy")


def remedy_words(item: Finding, lang: str) -> str | None:
    """What to do with the remedy's command, in `lang` (None when it has no code).

    Values come from the cluster and stand in a shell comment: none keeps a control
    character (`one_line`), so none can end the comment and start a command.
    """
    template = CATALOGS[lang].get(f"remedy.{item.remedy_code}") if item.remedy_code else None
    if template is None:
        return None
    given = {**item.remedy_params, **remedy_links(item.remedy_params)}
    params: dict[str, object] = {
        k: one_line(v) if isinstance(v, str) else v for k, v in given.items()
    }
    return _fill(template, params)


def remedy_text(item: Finding, lang: str) -> str:
    """The remedy a person copies: the command with what to do as its comment, in `lang`
    (the comment alone where nothing can be pasted, so pasting it runs nothing)."""
    words = remedy_words(item, lang)
    command = item.remedy_command or item.remedy
    if not words:
        return command
    return f"{command}  # {words}" if command else f"# {words}"


def worded(item: Finding, lang: str) -> Finding:
    """The finding with its `title`, `remedy` and coded evidence (a plugin's refusal) worded
    in `lang` (for JSON answers)."""
    update = {
        "title": finding_title(item, lang),
        "remedy": remedy_text(item, lang),
        "evidence": worded_values(item.evidence, lang),
    }
    return item.model_copy(update=update)
