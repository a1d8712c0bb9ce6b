"""The change record of each kind of change, built by the service before it writes.

The writers in app.kube only stamp the moment the writes were made and the warnings
they met (`stamped`); who, what, before, after, the change undone and the rollout facts
are the use case's business. Pure.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import ChangePlan, ChangeWarning
from app.domain.changes.split_models import SplitPlan


def mode_record(
    plan: ChangePlan,
    *,
    change: str,
    user: str,
    at: datetime,
    rolls_back: str | None = None,
    rollout: dict[str, Any] | None = None,
    forced: bool = False,
) -> ChangeRecord:
    """The record of a mode change (or its rollback) as planned."""
    return ChangeRecord(
        id=change,
        kind="mode",
        action=plan.kind,
        at=at,
        user=user,
        summary=f"{plan.before.describe()} -> {plan.after.describe()}",
        before=plan.before.as_json(),
        after=plan.after.as_json(),
        rolls_back=rolls_back,
        rollout=rollout,
        forced=forced,
    )


def split_record(
    plan: SplitPlan,
    *,
    change: str,
    user: str,
    at: datetime,
    rolls_back: str | None = None,
    forced: bool = False,
) -> ChangeRecord:
    """The record of a node's split, return to shared, or their rollback, as planned."""
    return ChangeRecord(
        id=change,
        kind="split",
        action="rollback" if plan.kind == "rollback" else "change",
        at=at,
        user=user,
        summary=plan.describe(),
        before=plan.before.as_json(),
        after=plan.after.as_json(),
        node=plan.node,
        rolls_back=rolls_back,
        forced=forced,
    )


def stamped(record: ChangeRecord, *, at: datetime, warnings: list[ChangeWarning]) -> ChangeRecord:
    """`record` as applied: the moment of the writes and what they warned about."""
    return dataclasses.replace(record, at=at, warnings=tuple(warnings))
