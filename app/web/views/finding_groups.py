"""Findings as a page lists them: each root cause once, the findings it explains folded under it.

The domain links a consequence to its root (`Finding.caused_by`, the root's `id`); here a
list becomes one row per root with its consequences beneath. A consequence whose root the
list lacks (a filter kept it alone) is a row of its own that names its cause.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.domain.snapshot import Finding


@dataclass(frozen=True)
class FindingGroup:
    finding: Finding
    consequences: list[Finding] = field(default_factory=list)


def grouped(findings: Sequence[Finding]) -> list[FindingGroup]:
    """One group per finding the list shows on its own, in the list's order."""
    ids = {item.id for item in findings}
    folded: dict[str, list[Finding]] = {}
    for item in findings:
        if item.caused_by in ids:
            folded.setdefault(item.caused_by, []).append(item)
    return [
        FindingGroup(item, folded.get(item.id, []))
        for item in findings
        if item.caused_by not in ids
    ]


def roots(findings: Iterable[Finding]) -> list[Finding]:
    """The findings no other one explains (what a summary names)."""
    return [item for item in findings if item.caused_by is None]


def element_id(finding_id: str) -> str:
    """A stable element id for a finding's `id`, so an open or closed row survives a refresh
    and a consequence links to its cause."""
    return "finding-" + hashlib.sha1(finding_id.encode(), usedforsecurity=False).hexdigest()[:12]


def finding_key(finding: Finding) -> str:
    """The element id of a finding's row."""
    return element_id(finding.id)


def cause_code(finding: Finding) -> str:
    """The code of the finding this one follows from (its `caused_by` id starts with it)."""
    return (finding.caused_by or "").split("|", 1)[0]
