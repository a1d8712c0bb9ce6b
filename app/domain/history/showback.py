"""Showback: GPU-hours per namespace, owner or node over a window, reconciled to the total.

The store hands over share-seconds (a share of GPUs held times the seconds it stood for)
already added up per namespace, owner and node; rows add them up per key. Every row's
`gpu_hours` adds up to `totals.gpu_hours`, which never exceeds the physical GPU-hours (the
samples keep each node's holdings within its GPUs; rows are rounded down, physical up).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

ShowbackBy = Literal["namespace", "owner", "node"]
SHOWBACK_BY: tuple[ShowbackBy, ...] = ("namespace", "owner", "node")
HOUR_S = 3600.0
DECIMALS = 6  # a GPU-hour to 3.6 ms
SCALE = 10**DECIMALS


@dataclass(frozen=True)
class HeldSeconds:
    """Share-seconds one namespace/owner held on one node (or slot-seconds of a resource)."""

    namespace: str = ""  # the store fills the key a showback asks for (the others: "")
    owner: str = ""
    node: str = ""
    share_s: float = 0.0
    used_s: float = 0.0
    idle_s: float = 0.0
    slot_s: tuple[tuple[str, float], ...] = ()


def held_seconds(
    by: ShowbackBy,
    shares: Iterable[tuple[str, float, float, float]],
    slots: Iterable[tuple[str, str, float]],
) -> list[HeldSeconds]:
    """A store's sums per key (share-, used-, idle-seconds; slot-seconds per resource) as
    HeldSeconds keyed by `by`."""
    by_key: dict[str, list[tuple[str, float]]] = {}
    for key, resource, slot_s in slots:
        by_key.setdefault(key, []).append((resource, slot_s))
    found = [
        _keyed(
            by,
            key,
            share_s=share_s,
            used_s=used_s,
            idle_s=idle_s,
            slot_s=tuple(sorted(by_key.pop(key, []))),
        )
        for key, share_s, used_s, idle_s in shares
    ]
    return found + [_keyed(by, key, slot_s=tuple(sorted(rest))) for key, rest in by_key.items()]


def _keyed(
    by: ShowbackBy,
    key: str,
    *,
    share_s: float = 0.0,
    used_s: float = 0.0,
    idle_s: float = 0.0,
    slot_s: tuple[tuple[str, float], ...] = (),
) -> HeldSeconds:
    return HeldSeconds(
        key if by == "namespace" else "",
        key if by == "owner" else "",
        key if by == "node" else "",
        share_s,
        used_s,
        idle_s,
        slot_s,
    )


@dataclass
class ShowbackRow:
    """One namespace, owner or node: GPU-hours held, of those used and idle, slot-hours by
    resource."""

    key: str
    gpu_hours: float = 0.0
    used_gpu_hours: float = 0.0
    idle_held_gpu_hours: float = 0.0
    slot_hours: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Showback:
    """GPU-hours per namespace, owner or node (`by`), most first; their sum, and the physical
    GPU-hours of all the GPUs sampled (rounded up: the sum never exceeds it)."""

    by: ShowbackBy
    rows: tuple[ShowbackRow, ...]
    gpu_hours: float
    physical_gpu_hours: float


def showback(held: Iterable[HeldSeconds], by: ShowbackBy, *, physical_gpu_s: float) -> Showback:
    """The rows per `by`, most GPU-hours first, and the totals they add up to."""
    rows: dict[str, ShowbackRow] = {}
    for item in held:
        key = {"namespace": item.namespace, "owner": item.owner, "node": item.node}[by]
        row = rows.setdefault(key, ShowbackRow(key))
        row.gpu_hours += item.share_s / HOUR_S
        row.used_gpu_hours += item.used_s / HOUR_S
        row.idle_held_gpu_hours += item.idle_s / HOUR_S
        for resource, slot_s in item.slot_s:
            row.slot_hours[resource] = row.slot_hours.get(resource, 0.0) + slot_s / HOUR_S
    for row in rows.values():
        row.gpu_hours = _down(row.gpu_hours)
        row.used_gpu_hours = _down(row.used_gpu_hours)
        row.idle_held_gpu_hours = _down(row.idle_held_gpu_hours)
        row.slot_hours = {name: _down(hours) for name, hours in sorted(row.slot_hours.items())}
    ordered = tuple(sorted(rows.values(), key=lambda row: (-row.gpu_hours, row.key)))
    return Showback(
        by,
        ordered,
        gpu_hours=round(sum(row.gpu_hours for row in ordered), DECIMALS),
        physical_gpu_hours=math.ceil(round(physical_gpu_s / HOUR_S * SCALE, 3)) / SCALE,
    )


def _down(hours: float) -> float:
    """Hours to `DECIMALS` places, rounded down: rounded rows never add up past the total
    of the samples (nor past the physical GPU-hours, rounded up)."""
    return float(math.floor(round(hours * SCALE, 3)) / SCALE)
