"""`GET /api/v1/plugin/rollout`: where the latest plugin change stands.

The view itself is app.web.services.changes.rollout_view (shared with the rollout page); it takes no
query: the change's facts come from the record the apply wrote on the DaemonSet.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import Field

from app.domain.described import Described
from app.i18n.translate import Translator
from app.web.deps import Lang, RuntimeDep
from app.web.services.changes.rollout_view import RolloutView, rollout_view

router = APIRouter(prefix="/api/v1/plugin", tags=["read"])


class NodeRolloutOut(Described):
    node: str
    """The node"""
    expected: int | None
    """Slots it should advertise after the change"""
    advertised: int | None
    """Slots it advertises now; null when absent"""
    resource: str
    """The resource"""
    state: Literal["done", "waiting", "zero", "failing"]
    """done; waiting (awaited); zero (expected at 0, not awaited); failing (plugin pod fails, not
    awaited)"""
    broken_before: bool
    """Its plugin already failed before the change"""


class RolloutOut(Described):
    """GET /api/v1/plugin/rollout: where the latest plugin change stands."""

    state: Literal["done", "rolling-out", "stuck", "no-daemonset"]
    """done | rolling-out | stuck | no-daemonset"""
    done: bool
    """True when every node advertises what it should"""
    generation: int
    """The DaemonSet's metadata.generation"""
    observed_generation: int
    """status.observedGeneration"""
    desired: int
    """status.desiredNumberScheduled"""
    updated: int
    """status.updatedNumberScheduled"""
    ready: int
    """status.numberReady"""
    mode: str | None
    """The mode being rolled out"""
    replicas: int | None
    """Its slots per GPU"""
    resource: str | None
    """Its resource"""
    elapsed_s: float | None
    """Seconds since the change was applied"""
    nodes: list[NodeRolloutOut]
    """Every node's progress"""
    pending: list[str]
    """What the rollout still waits for, in the language asked for (`?lang=`, the `lang` cookie,
    Accept-Language)"""
    blocked_by: list[str] = Field(default_factory=list)
    """Nodes whose unready plugin pods spend the DaemonSet's maxUnavailable: the DaemonSet
    controller replaces no other pod until they are fixed"""
    change_id: str | None = None
    """The change this rollout follows"""
    since: str | None = None
    """When the change was applied"""
    broken_before: list[str] = Field(default_factory=list)
    """Nodes whose plugin pod failed before the change"""
    max_unavailable: dict[str, object] | None = None
    """maxUnavailable raised for this rollout to pass the failing nodes: from, to, restoredAt (null
    until it is put back)"""


def rollout_out(view: RolloutView, lang: str = "en") -> RolloutOut:
    status, expected, record = view.status, view.expected, view.record
    t = Translator(lang)
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
            NodeRolloutOut.model_validate(n, from_attributes=True)
            for n in (status.nodes if status else ())
        ],
        pending=[t(f"rollout.{w.code}", **w.params) for w in (status.stuck if status else ())],
        blocked_by=list(status.blocked_by) if status else [],
        change_id=record.change_id if record else None,
        since=record.since if record else None,
        broken_before=sorted(view.broken_before),
        max_unavailable=record.budget.as_json() if record and record.budget else None,
    )


@router.get("/rollout", response_model=RolloutOut)
def get_rollout(runtime: RuntimeDep, lang: Lang) -> RolloutOut:
    """The latest plugin change's rollout: done when every node that should advertise does."""
    return rollout_out(rollout_view(runtime.changes), lang)
