"""A mode change's rollout: its record on the DaemonSet, failing nodes, and the budget put back.

The apply records, in the same DaemonSet write, when the change started, the nodes whose
plugin pod already failed and, when the admin chose to let the rollout pass them, the
`maxUnavailable` raised by their count. A watcher then puts `maxUnavailable` back once the
rollout is done (or after `RESTORE_DEADLINE_S`), writes that into the DaemonSet's record and
the change's history record (re-signed), and the rollout view says so.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import threading
from dataclasses import dataclass

from app.domain.changes.history import change_id
from app.domain.changes.models import ChangePlan
from app.domain.changes.rollout import failing_plugin_nodes, max_unavailable
from app.domain.changes.rollout_record import (
    RolloutRecord,
    passed_now,
    planned_rollout,
    restored_budget,
    rollout_record,
)
from app.errors import ClusterError
from app.kube.writer import PluginWriter
from app.web.auth.principal import Admin
from app.web.services.changes.pipeline import ChangeContext, get_writer, iso, writer_for
from app.web.services.changes.rollout_view import rollout_view

log = logging.getLogger(__name__)
audit_log = logging.getLogger("gpu_slots.audit")

RESTORE_DEADLINE_S = 1800.0
POLL_S = 1.0


@dataclass(frozen=True)
class FailingNodes:
    """The target DaemonSet's nodes whose plugin pod fails now, and its rollout budget."""

    nodes: frozenset[str]
    max_unavailable: int

    @property
    def holds(self) -> bool:
        """The controller's budget is spent on them: the rollout will hold."""
        return bool(self.nodes) and len(self.nodes) >= self.max_unavailable


def failing_now(ctx: ChangeContext) -> frozenset[str]:
    """The target DaemonSet's nodes whose plugin pod fails now."""
    return failing_plugin_nodes(ctx.snapshots.current(), target=ctx.settings.plugin_target.ref)


def failing_nodes(ctx: ChangeContext, plan: ChangePlan) -> FailingNodes:
    nodes = failing_now(ctx)
    desired = int(((plan.daemonset_before.get("status") or {}).get("desiredNumberScheduled")) or 0)
    return FailingNodes(nodes, max_unavailable(plan.daemonset_before, desired))


class RolloutWouldHold(Exception):
    """Apply was asked without the admin choosing what to do about the failing nodes that
    would hold the rollout: nothing is written (no default leaves a half-applied change)."""

    def __init__(self, failing: FailingNodes) -> None:
        super().__init__(f"the rollout would hold at {', '.join(sorted(failing.nodes))}")
        self.failing = failing


def check_choice(ctx: ChangeContext, plan: ChangePlan, pass_failing: bool | None) -> bool:
    """`pass_failing` as chosen; None (not chosen) is refused when the rollout would hold."""
    if pass_failing is None:
        failing = failing_nodes(ctx, plan)
        if plan.rolls_pods and failing.holds:
            raise RolloutWouldHold(failing)
    return bool(pass_failing)


class NothingHeld(Exception):
    """The rollout is not held by failing nodes (done, moving, or another change's)."""


def pass_failing_now(ctx: ChangeContext, admin: Admin) -> RolloutRecord:
    """Let the held rollout pass its failing nodes now: maxUnavailable raised by their
    count on the DaemonSet (recorded, put back once the rollout is done), as the preview's
    choice would have done at apply."""
    view = rollout_view(ctx)
    if not view.held_by or view.record is None or view.status is None:
        raise NothingHeld
    with writer_for(ctx, admin.principal) as writer:
        current = writer.read().daemonset
        mine = rollout_record(current)
        if current is None or mine is None or mine.change_id != view.record.change_id:
            raise NothingHeld
        budget_now = max_unavailable(current, view.status.desired)
        body, record = passed_now(current, mine, len(view.held_by), budget_now=budget_now)
        writer.replace_daemonset(body, seen=current, action="letting the rollout pass")
    _record_put_back(get_writer(ctx), record)
    audit_log.info(
        "rollout of change %s let past failing nodes %s",
        record.change_id,
        ", ".join(view.held_by),
        extra={
            "user": admin.user,
            "change_id": record.change_id,
            "max_unavailable": record.budget and record.budget.as_json(),
        },
    )
    restore_when_done(ctx, get_writer(ctx), record)
    ctx.snapshots.poke()
    return record


def with_rollout(
    ctx: ChangeContext, plan: ChangePlan, *, pass_failing: bool
) -> tuple[ChangePlan, RolloutRecord]:
    """The plan to write, carrying its rollout record (and the raised budget, if chosen)."""
    now = ctx.clock()
    failing = failing_nodes(ctx, plan)
    record = RolloutRecord(
        change_id=change_id(now, secrets.token_hex(3)),
        since=iso(now),
        broken_before=tuple(sorted(failing.nodes)),
    )
    daemonset, record = planned_rollout(
        plan.daemonset,
        record=record,
        failing=failing.nodes,
        pass_failing=pass_failing,
        budget_now=failing.max_unavailable,
    )
    return dataclasses.replace(plan, daemonset=daemonset), record


def restore_when_done(ctx: ChangeContext, writer: PluginWriter, record: RolloutRecord) -> None:
    """Start the watcher that puts maxUnavailable back (only when this rollout raised it)."""
    if record.budget is None:
        return
    thread = threading.Thread(
        target=_restore_loop,
        args=(ctx, writer, record),
        name=f"restore-max-unavailable-{record.change_id}",
        daemon=True,
    )
    thread.start()


def _restore_loop(ctx: ChangeContext, writer: PluginWriter, record: RolloutRecord) -> None:
    """Poll the rollout view (the watch cache: no API call) until done, then restore."""
    stop = threading.Event()
    started = ctx.clock()
    while not stop.wait(POLL_S):
        try:
            view = rollout_view(ctx)
            mine = view.record is not None and view.record.change_id == record.change_id
            if not mine:
                return  # a newer change took over the DaemonSet (and its record)
            late = (ctx.clock() - started).total_seconds() > RESTORE_DEADLINE_S
            if view.state == "done" or late:
                restore_now(ctx, writer, record)
                return
        except Exception:  # a watcher thread must never die loudly: say so and stop
            log.exception("watching the rollout of change %s failed", record.change_id)
            return


def restore_now(ctx: ChangeContext, writer: PluginWriter, record: RolloutRecord) -> bool:
    """Put maxUnavailable back on the DaemonSet if it still carries this rollout's raise."""
    try:
        current = writer.read().daemonset
        mine = rollout_record(current)
        if current is None or mine is None or mine.change_id != record.change_id:
            return False
        restored = restored_budget(current, mine, at=iso(ctx.clock()))
        if restored is None:
            return False
        writer.replace_daemonset(restored, seen=current, action="restoring maxUnavailable")
    except ClusterError as exc:
        log.warning("putting maxUnavailable back failed: %s", exc)
        return False
    _record_put_back(writer, rollout_record(restored))
    audit_log.info(
        "maxUnavailable put back after the rollout of change %s",
        record.change_id,
        extra={
            "change_id": record.change_id,
            "max_unavailable": record.budget and record.budget.as_json(),
        },
    )
    ctx.snapshots.poke()
    return True


def _record_put_back(writer: PluginWriter, done: RolloutRecord | None) -> None:
    """The change's history record says, as its DaemonSet does, how its budget was raised
    or put back (re-signed); a failure is only logged: the DaemonSet is right either way."""
    if writer.history is None or done is None or done.change_id is None:
        return
    try:
        if not writer.history.update_rollout(done.change_id, done.as_json()):
            log.warning("change %s has no verified record to update", done.change_id)
    except (ClusterError, ValueError) as exc:
        log.warning("recording that maxUnavailable was put back failed: %s", exc)
