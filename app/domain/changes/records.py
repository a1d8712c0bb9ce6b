"""The change record of each kind of change, built by the service before it writes, and the
request that undoes one.

The writers in app.kube only stamp the moment the writes were made and the warnings
they met (`stamped`); who, what, before, after, the change undone and the rollout facts
are the use case's business. Undoing a change asks for its typed `before` again, through
the same plan, preview and apply as any change. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import (
    ChangePlan,
    ChangeRequest,
    ChangeWarning,
    PlanRefused,
    PluginSettings,
    RefusalCode,
)
from app.domain.changes.split_models import SplitPlan, SplitRequest, SplitState
from app.domain.snapshot import Mode


@dataclass(frozen=True)
class Authored:
    """Who made a change, when, and under which id; the change it undoes (None: none); whether
    it was applied without a preview's token. The same for every kind of change."""

    change: str
    user: str
    at: datetime
    rolls_back: str | None = None
    forced: bool = False


def mode_record(
    plan: ChangePlan, made: Authored, *, rollout: dict[str, Any] | None = None
) -> ChangeRecord:
    """The record of a mode change (or its rollback) as planned."""
    return ChangeRecord(
        id=made.change,
        kind="mode",
        action=plan.kind,
        at=made.at,
        user=made.user,
        summary=f"{plan.before.describe()} -> {plan.after.describe()}",
        before=plan.before,
        after=plan.after,
        rolls_back=made.rolls_back,
        rollout=rollout,
        forced=made.forced,
    )


def split_record(plan: SplitPlan, made: Authored) -> ChangeRecord:
    """The record of a node's split, return to shared, or their rollback, as planned."""
    return ChangeRecord(
        id=made.change,
        kind="split",
        action="rollback" if plan.kind == "rollback" else "change",
        at=made.at,
        user=made.user,
        summary=plan.describe(),
        before=plan.before,
        after=plan.after,
        node=plan.node,
        rolls_back=made.rolls_back,
        forced=made.forced,
    )


def stamped(record: ChangeRecord, *, at: datetime, warnings: list[ChangeWarning]) -> ChangeRecord:
    """`record` as applied: the moment of the writes and what they warned about."""
    return replace(record, at=at, warnings=tuple(warnings))


def mode_undo_request(record: ChangeRecord) -> ChangeRequest:
    """The mode change that puts back `record`'s settings before; refused (not reversible)
    when they are no config GPU Slots writes (MPS, unknown, unusable)."""
    before = record.before
    writable = (Mode.BASIC, Mode.TIME_SLICING)
    if not isinstance(before, PluginSettings) or before.mode not in writable or before.error:
        mode = before.mode.value if isinstance(before, PluginSettings) else record.kind
        raise PlanRefused(
            RefusalCode.NOT_REVERSIBLE, "config-not-writable", change=record.id, mode=mode
        )
    return ChangeRequest(
        mode="basic" if before.mode is Mode.BASIC else "time-slicing",
        replicas=before.replicas or 1,
        rename_by_default=before.rename_by_default,
        fail_requests_greater_than_one=before.fail_requests_greater_than_one,
    )


def split_undo_request(record: ChangeRecord, *, confirm: bool) -> SplitRequest:
    """The split that puts `record`'s node back as it was before: its own DaemonSet with
    those GPUs, the shared one, or (config-manager installs) the node's config key."""
    before = record.before
    if not record.node or not isinstance(before, SplitState):
        raise PlanRefused(RefusalCode.NOT_REVERSIBLE, "record-names-no-node", change=record.id)
    if not before.per_node_config and not before.own:
        return SplitRequest(record.node, None, confirm_host_processes=confirm)
    return SplitRequest(
        record.node,
        before.kubernetes_gpus,
        "time-slicing" if before.mode == Mode.TIME_SLICING.value else "basic",
        before.replicas or 1,
        confirm,
        restore_config_key=before.per_node_config,
        config_key=before.config_key or None,
    )
