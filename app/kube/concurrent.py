"""Two changes of one node at once: the loser hears 409 and the winner's change id (issue 33).

Every object a split creates or replaces carries the id of the change that wrote it
(annotation `gpu-slots.io/change-id`), so when a write meets someone else's (409), the
object as it is now names the change that won. Before, the loser was told 502 "the cluster
is as before" while the winner's split stood, and nobody said whose it was.
"""

from __future__ import annotations

import copy
import dataclasses

from app.domain.changes.split_models import ObjectWrite, SplitPlan
from app.domain.cluster import Manifest
from app.errors import ClusterError, ConflictError

CHANGE_ID_ANNOTATION = "gpu-slots.io/change-id"


class ConcurrentChange(ConflictError):
    """Another change won the race for an object of this change; this one was undone."""

    def __init__(self, message: str, *, winner: str | None, cause: ClusterError) -> None:
        super().__init__(message, status=409, reason="Conflict")
        self.winner = winner
        self.cause = cause


def with_change_id(plan: SplitPlan, change_id: str) -> SplitPlan:
    """`plan` whose DaemonSet and ConfigMap writes carry `change_id` in an annotation."""
    return dataclasses.replace(plan, writes=tuple(_stamped(w, change_id) for w in plan.writes))


def _stamped(write: ObjectWrite, change_id: str) -> ObjectWrite:
    if write.action not in ("create", "replace") or write.after is None:
        return write
    after = copy.deepcopy(write.after)
    meta = after.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), CHANGE_ID_ANNOTATION: change_id}
    return dataclasses.replace(write, after=after)


def winner_of(current: Manifest | None) -> str | None:
    """The change id the object carries now (None: not written by a change of GPU Slots)."""
    if current is None:
        return None
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(CHANGE_ID_ANNOTATION) if isinstance(annotations, dict) else None
    return str(value) if value else None


def concurrent_change(
    write: ObjectWrite, current: Manifest | None, failed: ClusterError
) -> ConcurrentChange:
    """The 409 for a write that met another change's; `failed` says what was undone."""
    winner = winner_of(current)
    by = f"change {winner}" if winner else "a write outside GPU Slots"
    message = (
        f"{write.kind} {write.name} was changed at the same time by {by}; this change was not "
        f"applied. {failed}"
    )
    return ConcurrentChange(message, winner=winner, cause=failed)
