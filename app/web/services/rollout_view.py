"""The latest plugin change's rollout, for the rollout page and `GET /api/v1/plugin/rollout`.

Reads only the watch cache and the snapshot. Without a generation it follows the DaemonSet's
current one, so the page and the API always show the latest change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from app.domain.changes.models import PluginSettings
from app.domain.changes.plan import current_settings
from app.domain.changes.rollout import RolloutStatus, rollout_status
from app.domain.kube_time import parse_time
from app.web.runtime import Runtime
from app.web.services.plugin_admin import cached_objects

STUCK_AFTER_S = 60.0
MAX_BROKEN = 64


@dataclass(frozen=True)
class RolloutView:
    status: RolloutStatus | None
    expected: PluginSettings | None
    generation: int
    since: datetime | None
    elapsed_s: float | None
    broken_before: frozenset[str]

    @property
    def stuck(self) -> bool:
        return self.elapsed_s is not None and self.elapsed_s > STUCK_AFTER_S

    @property
    def state(self) -> Literal["done", "rolling-out", "stuck", "no-daemonset"]:
        if self.status is None:
            return "no-daemonset"
        if self.status.done:
            return "done"
        return "stuck" if self.stuck or self.status.blocked_by else "rolling-out"


def parse_broken(value: str | None) -> frozenset[str]:
    """`broken=a,b`: nodes whose plugin already failed before the change (bounded)."""
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    return frozenset(name[:253] for name in names[:MAX_BROKEN])


def rollout_view(
    runtime: Runtime,
    *,
    generation: int | None,
    since: str | None,
    broken_before: frozenset[str] = frozenset(),
) -> RolloutView:
    daemonset, configmap = cached_objects(runtime)
    expected = current_settings(daemonset, configmap) if daemonset is not None else None
    current = int(((daemonset or {}).get("metadata") or {}).get("generation") or 0)
    started_at = parse_time(since) if since else None
    if generation is None or generation < current:
        if generation is not None and generation < current:
            started_at = None  # a newer change followed: its start is not known here
        generation = current
    status = None
    if expected is not None:
        status = rollout_status(
            daemonset,
            runtime.source.items("pods"),
            runtime.snapshots.current(),
            expected=expected,
            generation=generation,
            since=started_at,
            broken_before=broken_before,
        )
    now = runtime.clock()
    elapsed_s = None if started_at is None else max(0.0, (now - started_at).total_seconds())
    return RolloutView(status, expected, generation, started_at, elapsed_s, broken_before)
