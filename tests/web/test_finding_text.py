"""Every finding code is worded in both catalogs, its titles filled from the params it emits."""

from __future__ import annotations

import pytest

from app.domain.findings.catalogue import CATALOGUE
from app.domain.snapshot import Finding
from app.i18n.translate import CATALOGS, LANGUAGES
from app.web.views.finding_text import (
    finding_explanation,
    finding_summary,
    finding_title,
    placeholders,
    title_key,
)
from tests.domain.test_findings import CASES, Builder
from tests.domain.worlds import snap


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_catalogued_code_has_a_summary_title_and_remedy(lang: str) -> None:
    missing = [
        f"finding.{code}.{part}"
        for code in CATALOGUE
        for part in ("summary", "title", "remedy")
        if f"finding.{code}.{part}" not in CATALOGS[lang]
    ]
    assert missing == []


def test_the_catalogs_word_no_code_the_domain_does_not_know() -> None:
    for lang in LANGUAGES:
        codes = {key.split(".")[1] for key in CATALOGS[lang] if key.startswith("finding.")}
        assert codes - set(CATALOGUE) == set(), lang


def _raised(code: str, broken: Builder) -> list[Finding]:
    built = broken()
    state, options = built if isinstance(built, tuple) else (built, None)
    findings = snap(state, options=options).findings if options else snap(state).findings
    return [item for item in findings if item.code == code]


@pytest.mark.parametrize(("code", "broken", "_healthy"), CASES, ids=[c[0] for c in CASES])
def test_finding_gets_a_title_with_its_values_in_both_languages(
    code: str, broken: Builder, _healthy: Builder
) -> None:
    raised = _raised(code, broken)
    assert raised, code
    for item in raised:
        variant = item.params.get("variant")
        if variant is not None:  # a rule's other case has its own title in both catalogs
            assert title_key(item) == f"finding.{code}.title.{variant}"
            assert all(title_key(item) in CATALOGS[lang] for lang in LANGUAGES)
        for lang in LANGUAGES:
            template = CATALOGS[lang][title_key(item)]
            lacking = [name for name in placeholders(template) if item.params.get(name) is None]
            assert lacking == [], (lang, title_key(item))
            title = finding_title(item, lang)
            assert title != finding_summary(code, lang), title  # the template filled
            assert "{" not in title and "None" not in title
            assert finding_explanation(code, lang)


def test_a_variant_title_the_catalog_lacks_falls_back_to_the_base_title() -> None:
    item = Finding.model_validate(
        {
            "code": "plugin-daemonset-missing",
            "severity": "error",
            "scope": "cluster",
            "params": {"daemonset": "ns/ds", "variant": "not-in-the-catalog"},
            "evidence": {"daemonset": "ns/ds"},
            "remedy": "x",
        }
    )
    assert finding_title(item, "en") == "DaemonSet ns/ds not found"


def test_a_title_whose_value_is_missing_shows_the_summary_not_a_blank() -> None:
    item = Finding.model_validate(
        {
            "code": "plugin-daemonset-missing",
            "severity": "error",
            "scope": "cluster",
            "params": {},
            "evidence": {"x": 1},
            "remedy": "x",
        }
    )
    assert finding_title(item, "ko") == finding_summary("plugin-daemonset-missing", "ko")
    assert finding_title(item, "en") == "The device-plugin DaemonSet does not exist"
