"""What a write did, judged from the objects re-read after its answer was lost.

A write that timed out or got a 5xx may have been committed all the same. Before undoing
anything the writer re-reads the objects, and these pure functions say whether each one
holds the state from before the change (`old`), the one the plan wrote (`new`), or
neither (`other`: someone else's, or absent where it should be).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from app.domain.changes.models import ChangePlan
from app.domain.cluster import Manifest


class Found(StrEnum):
    OLD = "old"
    NEW = "new"
    OTHER = "other"


def contains(whole: Any, part: Any) -> bool:
    """Whether `whole` holds everything `part` says (the server may only add defaults)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            key in whole and contains(whole[key], value) for key, value in part.items()
        )
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(whole) == len(part)
            and all(contains(w, p) for w, p in zip(whole, part, strict=True))
        )
    return bool(whole == part)


def configmap_found(found: Manifest | None, plan: ChangePlan) -> Found:
    """The ConfigMap re-read after its write: old, new or other."""
    wanted = plan.configmap
    before = plan.configmap_before
    if wanted is not None and found is not None and found.get("data") == wanted.get("data"):
        return Found.NEW
    if before is None:
        return Found.OLD if found is None else Found.OTHER
    if found is not None and found.get("data") == before.get("data"):
        return Found.OLD
    return Found.OTHER


def daemonset_found(found: Manifest | None, plan: ChangePlan) -> Found:
    """The DaemonSet re-read after its write: old (untouched), new (ours) or other."""
    if found is None:
        return Found.OTHER
    seen = plan.resource_versions["daemonset"]
    version = str((found.get("metadata") or {}).get("resourceVersion", ""))
    if version == seen:
        return Found.OLD
    if contains(found.get("spec"), plan.daemonset.get("spec")):
        return Found.NEW
    return Found.OTHER


def describe(*, configmap: Found | None, daemonset: Found) -> str:
    """The state found, as a code: `old`, `new`, or `half-<configmap>-<daemonset>` (each
    old, new or other); the web layer words it (`outcome.*`). `configmap` None: not written."""
    if configmap is None:
        configmap = daemonset
    if configmap is Found.OLD and daemonset is Found.OLD:
        return "old"
    if configmap is Found.NEW and daemonset is Found.NEW:
        return "new"
    return f"half-{configmap.value}-{daemonset.value}"
