"""Every finding code is worded in both languages, its Korean title filled from its params."""

from __future__ import annotations

import pytest

from app.domain.findings.catalogue import CATALOGUE
from app.web.i18n.catalog_findings_en import FINDINGS_EN
from app.web.i18n.catalog_findings_ko import FINDINGS_KO
from app.web.views.finding_text import finding_explanation, finding_summary, finding_title
from tests.domain.test_findings import CASES, Builder
from tests.domain.worlds import snap


def test_every_catalogued_code_has_an_english_and_a_korean_entry() -> None:
    assert set(CATALOGUE) - set(FINDINGS_EN) == set()
    assert set(CATALOGUE) - set(FINDINGS_KO) == set()


@pytest.mark.parametrize(("code", "broken", "_healthy"), CASES, ids=[c[0] for c in CASES])
def test_finding_gets_a_korean_title_with_its_values(
    code: str, broken: Builder, _healthy: Builder
) -> None:
    built = broken()
    state, options = built if isinstance(built, tuple) else (built, None)
    findings = snap(state, options=options).findings if options else snap(state).findings
    raised = [item for item in findings if item.code == code]
    assert raised, code
    for item in raised:
        title = finding_title(item, "ko")
        assert title != finding_summary(code, "ko"), title  # the template filled, no fallback
        assert "{" not in title and "None" not in title
        assert finding_title(item, "en") == item.title
    assert finding_explanation(code, "ko") == FINDINGS_KO[code][2]
    assert finding_explanation(code, "en") == FINDINGS_EN[code]
