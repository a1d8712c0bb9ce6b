"""The latest plugin change's rollout, for the rollout page and `GET /api/v1/plugin/rollout`.

Reads only the watch cache and the snapshot. It follows the DaemonSet's current generation
and reads the change's facts (since when, the nodes already failing before it, the
maxUnavailable raised for it) from the rollout record the apply wrote on the DaemonSet
(app.domain.changes.rollout_record): the page, its fragment and the API take no query and
tell the same story, on every replica.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from app.domain.changes.models import PluginSettings
from app.domain.changes.plan import current_settings
from app.domain.changes.rollout import RolloutStatus, rollout_status
from app.domain.changes.rollout_record import RolloutRecord, rollout_record
from app.domain.cluster import Manifest
from app.domain.kube_time import parse_time
from app.web.services.changes.pipeline import ChangeContext, cached_objects

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


@dataclass
class _Latest:
    """The latest rollout status and what it was computed from.

    Every view of the overview asks; at 10,000 nodes a status costs ~0.25 s of CPU (a row
    per plugin pod and per node), so it is computed again only for another published
    snapshot, DaemonSet or ConfigMap (the very objects), watch cache generation or record,
    by one caller at a time: while it computes, the others get the status before it (at
    most one computation old) instead of waiting, or computing it too.
    """

    objects: tuple[Any, ...] = ()  # compared by identity
    facts: dict[str, Any] = field(default_factory=dict)  # compared by value
    status: RolloutStatus | None = None
    computing: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def holds(self, objects: tuple[Any, ...], facts: dict[str, Any]) -> bool:
        return (
            len(objects) == len(self.objects)
            and all(a is b for a, b in zip(objects, self.objects, strict=True))
            and facts == self.facts
        )


_LATEST = _Latest()


def _status_of(
    ctx: ChangeContext, daemonset: Manifest, configmap: Manifest | None, **facts: Any
) -> RolloutStatus:
    snapshot = ctx.snapshots.current()
    objects = (daemonset, configmap, snapshot)
    key = {**facts, "cache_generation": ctx.source.generation}
    with _LATEST.lock:
        latest = _LATEST.status
        if latest is not None and (_LATEST.computing or _LATEST.holds(objects, key)):
            return latest
        _LATEST.computing = True
    try:
        # the DaemonSet's own namespace only: its pods, not the cluster's 300,000
        namespace = (daemonset.get("metadata") or {}).get("namespace")
        pods = ctx.source.items("pods", namespace)
        status = rollout_status(daemonset, pods, snapshot, **facts)
        with _LATEST.lock:
            _LATEST.status, _LATEST.objects, _LATEST.facts = status, objects, key
        return status
    finally:
        with _LATEST.lock:
            _LATEST.computing = False


def rollout_view(ctx: ChangeContext) -> RolloutView:
    """Where the DaemonSet's current generation stands, with the latest change's record."""
    daemonset, configmap = cached_objects(ctx)
    expected = current_settings(daemonset, configmap) if daemonset is not None else None
    generation = int(((daemonset or {}).get("metadata") or {}).get("generation") or 0)
    record = rollout_record(daemonset)
    started_at = parse_time(record.since) if record is not None else None
    status = None
    if daemonset is not None and expected is not None:
        status = _status_of(
            ctx,
            daemonset,
            configmap,
            expected=expected,
            generation=generation,
            since=started_at,
            broken_before=frozenset(record.broken_before) if record is not None else frozenset(),
            template_generation=record.template_generation if record is not None else None,
        )
    now = ctx.clock()
    elapsed_s = None if started_at is None else max(0.0, (now - started_at).total_seconds())
    moved_at = status.progressed_at if status is not None else None
    idle_s = None if moved_at is None else max(0.0, (now - moved_at).total_seconds())
    return RolloutView(status, expected, generation, record, elapsed_s, idle_s)
