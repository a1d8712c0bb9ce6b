"""Two changes at once: the loser hears 409, that nothing of it was written, and who won.

Every object a change creates or replaces (a split's, a mode change's) carries the id of
the change that wrote it (annotation `gpu-slots.io/change-id`), so when a write meets
someone else's (409), the object as it is now names the change that won. Both writers
answer their loser here, in one wording (issues 33 and 48): before, a split's loser was told
502 "the cluster is as before", a mode change's loser the API server's bare text
("configmaps ... already exists", "the object has been modified").
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

from app.domain.changes.models import ChangePlan
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


def mode_with_change_id(plan: ChangePlan, change_id: str) -> ChangePlan:
    """A mode change's `plan` whose DaemonSet and ConfigMap carry `change_id`."""
    return dataclasses.replace(
        plan,
        daemonset=stamped(plan.daemonset, change_id),
        configmap=None if plan.configmap is None else stamped(plan.configmap, change_id),
    )


def _stamped(write: ObjectWrite, change_id: str) -> ObjectWrite:
    if write.action not in ("create", "replace") or write.after is None:
        return write
    return dataclasses.replace(write, after=stamped(write.after, change_id))


def stamped(obj: Manifest, change_id: str) -> Manifest:
    """A copy of `obj` that names `change_id` as the change that wrote it."""
    copied = copy.deepcopy(obj)
    meta = copied.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), CHANGE_ID_ANNOTATION: change_id}
    return copied


def winner_of(current: Manifest | None) -> str | None:
    """The change id the object carries now (None: not written by a change of GPU Slots)."""
    if current is None:
        return None
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(CHANGE_ID_ANNOTATION) if isinstance(annotations, dict) else None
    return str(value) if value else None


def concurrent_change(
    kind: str, name: str, read: Callable[[], Manifest | None], failed: ClusterError, *, undone: int
) -> ConcurrentChange:
    """The 409 for a write that met another change's, once the `undone` writes made before it
    were taken back; `read` re-reads the object (it names the winner), `failed` is what the
    writer found."""
    try:
        winner = winner_of(read())
    except ClusterError:
        winner = None
    by = f"change {winner}" if winner else "a write outside GPU Slots"
    taken_back = f" ({undone} write(s) made before it were undone)" if undone else ""
    message = (
        f"{kind} {name} was changed at the same time by {by}: this change was not applied and "
        f"nothing of it was written{taken_back}. Preview again to see the cluster as it is now. "
        f"Details: {failed}"
    )
    return ConcurrentChange(message, winner=winner, cause=failed)
