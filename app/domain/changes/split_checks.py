"""Refusals both split planners share (own DaemonSet and config label): the same codes."""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.changes.models import PlanRefused, RefusalCode, require_replicas
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
    return require_replicas(request.replicas, "replicas-range-split")
