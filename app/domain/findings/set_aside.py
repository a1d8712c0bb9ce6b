"""Objects set aside: a tenant's pod, slice or claim whose numbers could not be counted.

Each one is named with the field and the value (cut short), so the owner can fix it; the
rest of the cluster is counted as usual (see app.domain.bounds).
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.bounds import SetAside
from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import Remedy, remedy
from app.domain.findings.shell import sh
from app.domain.snapshot import EvidenceValue, Finding

MAX_NAMED = 200  # objects named one by one; the rest are counted in the last finding
_RESOURCES = {"Pod": "pod", "ResourceSlice": "resourceslice", "ResourceClaim": "resourceclaim"}


def set_aside_findings(items: Iterable[SetAside]) -> list[Finding]:
    """One `object-set-aside` finding per object (the first MAX_NAMED), in name order."""
    ordered = sorted(items, key=lambda s: (s.kind, s.key))
    found = [_one(item, more=0) for item in ordered[:MAX_NAMED]]
    if len(ordered) > MAX_NAMED:
        found[-1] = _one(ordered[MAX_NAMED - 1], more=len(ordered) - MAX_NAMED)
    return found


def _one(item: SetAside, *, more: int) -> Finding:
    evidence: dict[str, EvidenceValue] = {
        "object": f"{item.kind} {item.key}",
        "field": item.field,
        "value": item.value,
        "reason": item.reason,
    }
    if more:
        evidence["more_objects"] = more
    return finding(
        "object-set-aside",
        evidence=evidence,
        remedy=_remedy(item),
    )


def _remedy(item: SetAside) -> Remedy:
    resource = _RESOURCES.get(item.kind, item.kind.lower())
    namespace, _, name = item.key.rpartition("/")
    where = f"-n {sh(namespace)} " if namespace else ""
    return remedy(
        f"kubectl {where}get {resource} {sh(name)} -o yaml", "fix-field", field=item.field
    )
