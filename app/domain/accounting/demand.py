"""Pending GPU demand: pods not yet bound that want GPU resources, and why they do not fit.

Per resource: how many pods, how many slots, the oldest one's age, and the code of the
first reason that applies (worded in the web layer as `demand.<code>`): the resource is
advertised nowhere (`not-advertised`); the plugin refuses requests above one
(`refused-above-one`: `failRequestsGreaterThanOne`, MPS); the largest schedulable free slot
count of one node is below the smallest request (`too-large`); otherwise it fits somewhere
and waits on something else (`fits`).
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
        smallest = min(count for count, _ in items)
        reason, largest = _reason(resource, smallest, offers)
        found.append(
            PendingDemand(
                resource=resource,
                pods=len(items),
                slots=sum(count for count, _ in items),
                oldest_s=round(max(age for _, age in items), 1),
                reason=reason,
                smallest=smallest,
                largest=largest,
            )
        )
    return found


def is_pending_demand(pod: PodFacts) -> bool:
    """Not bound, not finished, and asking for a GPU resource."""
    return pod.node is None and pod.phase not in TERMINAL_PHASES and bool(pod.slots)


def _reason(resource: str, smallest: int, offers: Sequence[NodeOffer]) -> tuple[str, int]:
    """The reason's code (worded by the web layer as `demand.<code>`) and the largest
    schedulable free slot count of one advertising node (0 when none advertises)."""
    advertising = [o for o in offers if o.resources.get(resource, _NONE).allocatable > 0]
    if not advertising:
        return "not-advertised", 0
    largest = max(o.resources[resource].free for o in advertising)
    if smallest > 1 and all(resource in o.refuses_above_one for o in advertising):
        return "refused-above-one", largest
    return ("too-large" if largest < smallest else "fits"), largest


_NONE = ResourceState(allocatable=0, requested=0, free=0, stranded=0)
