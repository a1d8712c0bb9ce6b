"""Refusals both split planners share (own DaemonSet and config label): the same codes."""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.changes.models import MAX_REPLICAS, MIN_REPLICAS, PlanRefused, RefusalCode
from app.domain.changes.split_models import NodeGpu, SplitRequest


def require_inventory(request: SplitRequest, gpus: Sequence[NodeGpu]) -> None:
    """Refuse when no agent report lists the node's GPUs: their UUIDs are unknown."""
    if not gpus:
        raise PlanRefused(RefusalCode.NO_INVENTORY, "no-gpu-inventory", node=request.node)


def require_known_gpus(request: SplitRequest, gpus: Sequence[NodeGpu]) -> None:
    """Refuse a request naming a GPU the node does not have."""
    known = {g.uuid for g in gpus}
    unknown = [u for u in request.kubernetes_gpus or () if u not in known]
    if unknown:
        raise PlanRefused(
            RefusalCode.UNKNOWN_GPU,
            "unknown-gpu",
            node=request.node,
            unknown=", ".join(unknown),
            known=", ".join(sorted(known)),
        )


def wanted_replicas(request: SplitRequest) -> int:
    """The replicas of the requested mode (1 unless time-slicing); refused out of range."""
    if request.mode != "time-slicing":
        return 1
    if not MIN_REPLICAS <= request.replicas <= MAX_REPLICAS:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE,
            "replicas-range-split",
            min=MIN_REPLICAS,
            max=MAX_REPLICAS,
            got=request.replicas,
        )
    return request.replicas
