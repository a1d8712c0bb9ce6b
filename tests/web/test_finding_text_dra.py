"""DRA findings are worded in both languages, from their params (issue 16's catalogs)."""

from __future__ import annotations

import pytest

from app.domain.findings.catalogue import CATALOGUE
from app.web.catalog_findings_en import FINDINGS_EN
from app.web.catalog_findings_ko import FINDINGS_KO
from app.web.finding_text import finding_explanation, finding_summary, finding_title
from tests.domain.dra_worlds import DRA_CASES
from tests.domain.worlds import snap

DRA_CODES = [code for code, _broken, _healthy in DRA_CASES]


def test_every_dra_code_has_an_english_and_a_korean_entry() -> None:
    assert set(DRA_CODES) == {code for code in CATALOGUE if code.startswith("dra-")}
    assert set(DRA_CODES) <= set(FINDINGS_EN) & set(FINDINGS_KO)


@pytest.mark.parametrize(("code", "broken", "_healthy"), DRA_CASES, ids=DRA_CODES)
def test_dra_finding_gets_a_korean_title_with_its_values(
    code: str, broken: object, _healthy: object
) -> None:
    built = broken()  # type: ignore[operator]
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
