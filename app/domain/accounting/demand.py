"""Pending GPU demand: pods not yet bound that want GPU resources, and why they do not fit.

Per resource: how many pods, how many slots, the oldest one's age, and the first reason
that applies: the resource is advertised nowhere; the plugin refuses requests above one
(`failRequestsGreaterThanOne`, MPS); the largest schedulable free slot count of one node
is below the smallest request; otherwise it fits somewhere and waits on something else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.domain.accounting.pods import TERMINAL_PHASES, PodFacts
from app.domain.kube_time import parse_time
from app.domain.snapshot import PendingDemand, ResourceState


@dataclass(frozen=True)
class NodeOffer:
    """What one node offers a pending pod of some resource."""

    resources: dict[str, ResourceState]
    refuses_above_one: frozenset[str]  # resources whose plugin refuses requests above 1


def pending_demand(
    pods: Iterable[PodFacts], offers: Sequence[NodeOffer], *, now: datetime
) -> list[PendingDemand]:
    """Unbound, unfinished pods per GPU resource with the reason they cannot fit now."""
    wanting: dict[str, list[tuple[int, float]]] = {}
    for pod in pods:
        if not is_pending_demand(pod):
            continue
        created = parse_time(pod.created)
        age_s = max((now - created).total_seconds(), 0.0) if created else 0.0
        for resource, count in pod.slots.items():
            wanting.setdefault(resource, []).append((count, age_s))
    found = []
    for resource, items in sorted(wanting.items()):
        found.append(
            PendingDemand(
                resource=resource,
                pods=len(items),
                slots=sum(count for count, _ in items),
                oldest_s=round(max(age for _, age in items), 1),
                reason=_reason(resource, min(count for count, _ in items), offers),
            )
        )
    return found


def is_pending_demand(pod: PodFacts) -> bool:
    """Not bound, not finished, and asking for a GPU resource."""
    return pod.node is None and pod.phase not in TERMINAL_PHASES and bool(pod.slots)


def _reason(resource: str, smallest: int, offers: Sequence[NodeOffer]) -> str:
    advertising = [o for o in offers if o.resources.get(resource, _NONE).allocatable > 0]
    if not advertising:
        return f"no node advertises {resource}"
    if smallest > 1 and all(resource in o.refuses_above_one for o in advertising):
        return (
            f"requests of {smallest} {resource} are refused by the plugin "
            "(failRequestsGreaterThanOne)"
        )
    largest = max(o.resources[resource].free for o in advertising)
    if largest < smallest:
        return f"largest schedulable free is {largest} {resource}, below the request of {smallest}"
    return f"fits: a node has {largest} schedulable free {resource}; waiting on the scheduler"


_NONE = ResourceState(allocatable=0, requested=0, free=0, stranded=0)
