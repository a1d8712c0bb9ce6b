"""A split whose later write fails: settle the failed write, undo the ones made, say what is.

A timeout or a 5xx does not say a write failed, so the failed write's object is re-read
first: made after all (answer lost), the split goes on; untouched, the writes already made
are undone newest first, each from the object as re-read (its resourceVersion and uid, so
a change by someone else in between is left alone); and the admin is told the state found
for every object, by name. The judging is pure: app.domain.changes.split_undo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.domain.changes.models import ChangeWarning
from app.domain.changes.split_models import ObjectWrite, SplitPlan
from app.domain.changes.split_undo import inverse, landed, unchanged
from app.domain.cluster import Manifest
from app.errors import ClusterError
from app.kube.uncertain import is_uncertain

audit_log = logging.getLogger("gpu_slots.audit")

Read = Callable[[ObjectWrite], Manifest | None]
Write = Callable[[ObjectWrite], object]  # its answer is not read


class SplitFailed(ClusterError):
    """A write of the split failed; `restored`: the cluster is as before; `state`: as found."""

    def __init__(
        self, message: str, *, cause: ClusterError, done: list[str], restored: bool, state: str
    ) -> None:
        super().__init__(message, status=cause.status, reason=cause.reason)
        self.cause = cause
        self.done = done
        self.restored = restored
        self.state = state


class LostAnswer(Exception):
    """The failed write is in the cluster after all: go on with the split."""


def settle_failed(
    write: ObjectWrite, exc: ClusterError, read: Read, warnings: list[ChangeWarning]
) -> tuple[str, bool]:
    """Re-read after an uncertain failure: LostAnswer when made; else (state, untouched)."""
    if not is_uncertain(exc):
        return f"{write.key} not written ({exc})", True
    try:
        current = read(write)
    except ClusterError as error:
        return f"{write.key} unknown (the answer was lost and re-reading failed: {error})", False
    if landed(write, current):
        warnings.append(
            ChangeWarning(
                "answer-lost-made", {"action": write.action, "key": write.key, "error": str(exc)}
            )
        )
        raise LostAnswer
    if unchanged(write, current):
        return f"{write.key} not written ({exc}; re-reading shows it unchanged)", True
    return f"{write.key} changed, but not as planned (someone else's write?): left alone", False


def undo(
    plan: SplitPlan,
    done: list[ObjectWrite],
    exc: ClusterError,
    failed: tuple[str, bool],
    *,
    read: Read,
    write: Write,
    where: str,
    user: str,
) -> SplitFailed:
    """Undo `done` newest first; the error that tells the admin what the cluster holds."""
    states = [failed[0]]
    restored = failed[1]
    for made in reversed(done):
        state = _undo_one(made, read=read, write=write)
        restored = restored and state.endswith(": undone")
        states.append(state)
    summary = "; ".join(states)
    if restored:
        message = (
            f"{exc}. The writes made before it were undone: the cluster is as before the "
            f"change ({summary})."
        )
    else:
        message = (
            f"{exc}. The cluster is NOT as before the change: {summary}. Check these objects "
            f"with kubectl -n {where} before retrying."
        )
    audit_log.warning(
        f"{user} tried a GPU split: {plan.describe()}; it failed: {summary}",
        extra={
            "user": user,
            "kind": plan.kind,
            "outcome": "failed",
            "restored": restored,
            "state": summary,
            "error": str(exc),
            "node": plan.node,
        },
    )
    return SplitFailed(
        message,
        cause=exc,
        done=[f"{w.action} {w.key}" for w in done],
        restored=restored,
        state=summary,
    )


def _undo_one(made: ObjectWrite, *, read: Read, write: Write) -> str:
    try:
        current = read(made)
    except ClusterError as error:
        return f"{made.key} as written, not undone (re-reading failed: {error})"
    if not landed(made, current):
        return f"{made.key} changed by someone else since: left alone"
    back = inverse(made, current)
    try:
        write(back)
        return f"{made.key}: undone"
    except ClusterError as error:
        if not is_uncertain(error):
            return f"{made.key} as written, the undo failed ({error})"
        try:
            again = read(made)
        except ClusterError as reread:
            return f"{made.key} unknown (the undo's answer was lost, re-reading failed: {reread})"
        if unchanged(made, again):
            return f"{made.key}: undone"
        return f"{made.key} as written, the undo failed ({error})"
