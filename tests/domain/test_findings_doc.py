"""Every finding code is documented: the page links to docs/findings.md#<code>."""

from __future__ import annotations

import re
from pathlib import Path

from app.domain.findings.catalogue import CATALOGUE

DOC = Path(__file__).resolve().parents[2] / "app" / "web" / "assets" / "docs" / "findings.md"


def test_findings_doc_has_one_section_per_code() -> None:
    headings = re.findall(r"^## (\S+)$", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert sorted(headings) == sorted(CATALOGUE)
    assert len(headings) == len(set(headings))


def test_findings_doc_sections_state_catalogued_severity() -> None:
    text = DOC.read_text(encoding="utf-8")
    for code, kind in CATALOGUE.items():
        section = text.split(f"## {code}\n", 1)[1].split("\n## ", 1)[0]
        assert f"**Severity / scope**: {kind.severity.value}" in section, code
        for part in ("**Cause**", "**Evidence**", "**Remedy**"):
            assert part in section, (code, part)
