"""The latest plugin change's rollout, for the rollout page and `GET /api/v1/plugin/rollout`.

Reads only the watch cache and the snapshot. It follows the DaemonSet's current generation
and reads the change's facts (since when, the nodes already failing before it, the
maxUnavailable raised for it) from the rollout record the apply wrote on the DaemonSet
(app.domain.changes.rollout_record): the page, its fragment and the API take no query and
tell the same story, on every replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.domain.changes.models import PluginSettings
from app.domain.changes.plan import current_settings
from app.domain.changes.rollout import RolloutStatus, rollout_status
from app.domain.changes.rollout_record import RolloutRecord, rollout_record
from app.domain.kube_time import parse_time
from app.web.services.change_pipeline import ChangeContext, cached_objects

STUCK_AFTER_S = 60.0
RolloutState = Literal["done", "rolling-out", "stuck", "no-daemonset"]


@dataclass(frozen=True)
class RolloutView:
    status: RolloutStatus | None
    expected: PluginSettings | None
    generation: int
    record: RolloutRecord | None
    elapsed_s: float | None

    @property
    def broken_before(self) -> frozenset[str]:
        return frozenset(self.record.broken_before) if self.record is not None else frozenset()

    @property
    def stuck(self) -> bool:
        """Held by failing nodes (at once), or not done after a minute."""
        if self.status is None or self.status.done:
            return False
        late = self.elapsed_s is not None and self.elapsed_s > STUCK_AFTER_S
        return late or bool(self.status.blocked_by)

    @property
    def state(self) -> RolloutState:
        if self.status is None:
            return "no-daemonset"
        if self.status.done:
            return "done"
        return "stuck" if self.stuck else "rolling-out"


def rollout_view(ctx: ChangeContext) -> RolloutView:
    """Where the DaemonSet's current generation stands, with the latest change's record."""
    daemonset, configmap = cached_objects(ctx)
    expected = current_settings(daemonset, configmap) if daemonset is not None else None
    generation = int(((daemonset or {}).get("metadata") or {}).get("generation") or 0)
    record = rollout_record(daemonset)
    started_at = parse_time(record.since) if record is not None else None
    status = None
    if expected is not None:
        status = rollout_status(
            daemonset,
            ctx.source.items("pods"),
            ctx.snapshots.current(),
            expected=expected,
            generation=generation,
            since=started_at,
            broken_before=frozenset(record.broken_before) if record is not None else frozenset(),
        )
    now = ctx.clock()
    elapsed_s = None if started_at is None else max(0.0, (now - started_at).total_seconds())
    return RolloutView(status, expected, generation, record, elapsed_s)
