"""The latest plugin change's rollout, for the rollout page and `GET /api/v1/plugin/rollout`.

Reads only the watch cache and the snapshot. It follows the DaemonSet's current generation
and reads the change's facts (since when, the nodes already failing before it, the
maxUnavailable raised for it) from the rollout record the apply wrote on the DaemonSet
(app.domain.changes.rollout_record): the page, its fragment and the API take no query and
tell the same story, on every replica.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from app.domain.changes.models import PluginSettings
from app.domain.changes.plan import current_settings
from app.domain.changes.rollout import RolloutStatus, RolloutTarget, rollout_status
from app.domain.changes.rollout_record import RolloutRecord, rollout_record
from app.domain.cluster import Manifest
from app.domain.kube_time import parse_time
from app.domain.snapshot import Snapshot
from app.web.services.changes.pipeline import ChangeContext, cached_objects
from app.web.services.snapshots.derived import Derived

# A plugin pod normally starts in seconds; a rollout that has not moved for this long is
# called stuck even when no failing pod explains it (a pod stuck mounting, a lost node).
STUCK_AFTER_S = 60.0
RolloutState = Literal["done", "rolling-out", "stuck", "no-daemonset"]


@dataclass(frozen=True)
class RolloutView:
    status: RolloutStatus | None
    expected: PluginSettings | None
    generation: int
    record: RolloutRecord | None
    elapsed_s: float | None
    idle_s: float | None = None  # seconds since the rollout last moved

    @property
    def broken_before(self) -> frozenset[str]:
        return frozenset(self.record.broken_before) if self.record is not None else frozenset()

    @property
    def held_by(self) -> tuple[str, ...]:
        """Nodes whose failing plugin pod holds the rollout for good (empty when done)."""
        if self.status is None or self.status.done:
            return ()
        return self.status.held_by

    @property
    def stuck(self) -> bool:
        """Held by failing plugin pods, or no step for longer than a pod start takes.

        A pod that is only starting also spends the controller's budget for a few seconds:
        that is progress, never "stuck".
        """
        if self.status is None or self.status.done:
            return False
        idle = self.idle_s is not None and self.idle_s > STUCK_AFTER_S
        return idle or bool(self.status.held_by)

    @property
    def state(self) -> RolloutState:
        if self.status is None:
            return "no-daemonset"
        if self.status.done:
            return "done"
        return "stuck" if self.stuck else "rolling-out"


@dataclass(frozen=True)
class _Inputs:
    """What a status is worked out from beside the snapshot, as the watch cache has it now:
    compared by value (the DaemonSet's generation, the expected settings, the change's
    facts), so an admin's change is seen at once; the DaemonSet's status and its pods come
    with the next snapshot (every change of the cache is built into one)."""

    daemonset: Manifest = field(compare=False)
    record: RolloutRecord | None = field(compare=False)
    target: RolloutTarget


def _inputs(ctx: ChangeContext) -> _Inputs | None:
    """The DaemonSet, its settings and its rollout record (None: no DaemonSet)."""
    daemonset, configmap = cached_objects(ctx)
    if daemonset is None:
        return None
    record = rollout_record(daemonset)
    return _Inputs(
        daemonset,
        record,
        RolloutTarget(
            expected=current_settings(daemonset, configmap),
            generation=int((daemonset.get("metadata") or {}).get("generation") or 0),
            since=parse_time(record.since) if record is not None else None,
            broken_before=frozenset(record.broken_before) if record is not None else frozenset(),
            template_generation=record.template_generation if record is not None else None,
        ),
    )


def _status(ctx: ChangeContext, snapshot: Snapshot | None, inputs: _Inputs) -> RolloutStatus:
    """The costly part: a row per plugin pod and per node (~0.25 s at 10,000 nodes)."""
    # the DaemonSet's own namespace only: its pods, not the cluster's 300,000
    namespace = (inputs.daemonset.get("metadata") or {}).get("namespace")
    pods = ctx.source.items("pods", namespace)
    return rollout_status(inputs.daemonset, pods, snapshot, inputs.target)


def rollout_statuses(ctx: ChangeContext) -> Derived[_Inputs, RolloutStatus]:
    """The rollout status, worked out by the snapshot service's build thread for each
    published snapshot while it is asked for (app.web.services.snapshots.derived): held by
    the running dashboard's snapshot service, never by this module."""
    return ctx.snapshots.derived(
        "rollout-status", lambda: Derived(partial(_inputs, ctx), partial(_status, ctx))
    )


def rollout_view(ctx: ChangeContext) -> RolloutView:
    """Where the DaemonSet's current generation stands, with the latest change's record."""
    inputs = _inputs(ctx)
    if inputs is None:
        return RolloutView(None, None, 0, None, None)
    status = rollout_statuses(ctx).get(ctx.snapshots.current(), inputs)
    now = ctx.clock()
    target = inputs.target
    since, moved_at = target.since, status.progressed_at
    elapsed_s = None if since is None else max(0.0, (now - since).total_seconds())
    idle_s = None if moved_at is None else max(0.0, (now - moved_at).total_seconds())
    return RolloutView(status, target.expected, target.generation, inputs.record, elapsed_s, idle_s)
