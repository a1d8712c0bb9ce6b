"""The latest plugin change's rollout, for the rollout page and `GET /api/v1/plugin/rollout`.

Reads only the watch cache and the snapshot. Without a generation it follows the DaemonSet's
current one, so the page and the API always show the latest change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.domain.changes.models import PluginSettings
from app.domain.changes.plan import current_settings
from app.domain.changes.rollout import RolloutStatus, rollout_status
from app.domain.kube_time import parse_time
from app.web.deps import RuntimeDep
from app.web.plugin_admin import cached_objects
from app.web.runtime import Runtime

STUCK_AFTER_S = 60.0
MAX_BROKEN = 64

router = APIRouter(prefix="/api/v1/plugin", tags=["read"])


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


class NodeRolloutOut(BaseModel):
    node: str
    expected: int | None = Field(description="Slots it should advertise after the change")
    advertised: int | None
    resource: str
    state: Literal["done", "waiting", "zero", "failing"] = Field(
        description="done; waiting (awaited); zero (expected at 0, not awaited); failing "
        "(plugin pod fails, not awaited)"
    )
    broken_before: bool = Field(description="Its plugin already failed before the change")


class RolloutOut(BaseModel):
    """GET /api/v1/plugin/rollout: where the latest plugin change stands."""

    state: Literal["done", "rolling-out", "stuck", "no-daemonset"]
    done: bool
    generation: int
    observed_generation: int
    desired: int
    updated: int
    ready: int
    mode: str | None
    replicas: int | None
    resource: str | None
    elapsed_s: float | None
    nodes: list[NodeRolloutOut]
    pending: list[str] = Field(description="What the rollout still waits for (English)")
    blocked_by: list[str] = Field(
        default_factory=list,
        description="Nodes whose unready plugin pods spend the DaemonSet's maxUnavailable: "
        "the DaemonSet controller replaces no other pod until they are fixed",
    )


def rollout_out(view: RolloutView) -> RolloutOut:
    status, expected = view.status, view.expected
    return RolloutOut(
        state=view.state,
        done=view.state == "done",
        generation=view.generation,
        observed_generation=status.observed_generation if status else 0,
        desired=status.desired if status else 0,
        updated=status.updated if status else 0,
        ready=status.ready if status else 0,
        mode=expected.mode.value if expected else None,
        replicas=expected.replicas if expected else None,
        resource=expected.resource if expected else None,
        elapsed_s=None if view.elapsed_s is None else round(view.elapsed_s, 1),
        nodes=[
            NodeRolloutOut(
                node=n.node,
                expected=n.expected,
                advertised=n.advertised,
                resource=n.resource,
                state=n.state,
                broken_before=n.broken_before,
            )
            for n in (status.nodes if status else ())
        ],
        pending=list(status.stuck) if status else [],
        blocked_by=list(status.blocked_by) if status else [],
    )


@router.get("/rollout", response_model=RolloutOut)
def get_rollout(
    runtime: RuntimeDep,
    generation: Annotated[int | None, Query(ge=0, description="Default: the latest")] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    broken: Annotated[str | None, Query(max_length=4000)] = None,
) -> RolloutOut:
    """The latest plugin change's rollout: done when every node that should advertise does."""
    view = rollout_view(
        runtime, generation=generation, since=since, broken_before=parse_broken(broken)
    )
    return rollout_out(view)
