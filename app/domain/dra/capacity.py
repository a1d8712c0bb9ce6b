"""DRA capacity counted the way the driver publishes it, not by counting slice entries.

Two cases over-count when each device entry of a slice is taken as one GPU:

- Partitionable devices (dynamic MIG): the slice lists every placement a GPU could be cut
  into (the whole GPU, each MIG profile at each start), all drawing on one counter set of
  that GPU. They are one physical unit; it is allocated when any of them is.
- ConsumableShares: one device with `allowMultipleAllocations` and a `shares` capacity;
  several claims draw shares from it. Its capacity is its shares, and what is allocated is
  the shares the claims' results consumed (one each unless `consumedCapacity` says).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.domain.dra.inventory import DraView
from app.domain.dra.objects import Claim, Device
from app.domain.quantity import quantity_count

Unit = tuple[str, ...]


@dataclass(frozen=True)
class Shares:
    """Consumable shares of the cluster's shareable GPU devices."""

    total: int = 0
    allocated: int = 0


def unit_of(device: Device) -> Unit:
    """The physical unit a device entry belongs to: its counter set, else itself."""
    if device.counter_sets:
        return (device.driver, device.pool, device.counter_sets[0])
    return device.key


def units(view: DraView) -> dict[Unit, list[Device]]:
    """Device entries grouped into physical units (one per GPU or counter set)."""
    grouped: dict[Unit, list[Device]] = {}
    for device in view.devices.values():
        grouped.setdefault(unit_of(device), []).append(device)
    return grouped


def consumed_shares(claim: Claim, device: Device) -> int:
    """Shares a claim's results draw from one device (1 each unless consumedCapacity says)."""
    total = 0
    for result in claim.results:
        if result.key != device.key:
            continue
        value = dict(result.consumed).get("shares")
        total += 1 if value is None else quantity_count(value, field="consumedCapacity.shares")
    return total


def shares_of(view: DraView, devices: Iterable[Device]) -> Shares:
    total = allocated = 0
    for device in devices:
        if device.shares is None:
            continue
        total += device.shares
        claims = view.claims_by_device.get(device.key, [])
        used = sum(consumed_shares(claim, device) for claim in claims)
        allocated += min(used, device.shares)
    return Shares(total=total, allocated=allocated)
