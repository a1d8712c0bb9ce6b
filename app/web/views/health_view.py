"""A GPU's health as the node page words it: one item per reading, each with a state.

The catalog words each item (app/i18n/locale); the state (ok, warn, bad)
colours it, by the same rules that raise the health findings (app/domain/health.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from app.domain.health import (
    GpuHealthReading,
    fallen_off_bus,
    hard_throttle,
    hardware_xids,
    last_xid_at,
)
from app.domain.snapshot import GpuState

HOT_C = 85
State = Literal["ok", "warn", "bad"]


@dataclass(frozen=True)
class HealthItem:
    """One line of a GPU's health: the catalog key, its parameters, and how it reads."""

    key: str
    testid: str
    state: State = "ok"
    params: Mapping[str, object] = field(default_factory=dict)


def health_items(gpu: GpuState) -> list[HealthItem]:
    """What the agent says about the GPU's health; empty when it sent no health."""
    health = gpu.health
    if health is None:
        return []
    items: list[HealthItem] = []
    if fallen_off_bus(health):
        items.append(HealthItem("health_lost", "lost", "bad"))
    if health.temperature_c is not None:
        hot: State = "warn" if health.temperature_c >= HOT_C else "ok"
        items.append(
            HealthItem("health_temperature", "temperature", hot, {"c": health.temperature_c})
        )
    items += _power(health) + _ecc(health) + _memory(health) + [_xid(health)]
    return items


def _power(health: GpuHealthReading) -> list[HealthItem]:
    items = []
    if health.power_draw_w is not None:
        draw = round(health.power_draw_w)
        if health.power_limit_w is not None:
            limit = round(health.power_limit_w)
            items.append(HealthItem("health_power", "power", "ok", {"draw": draw, "limit": limit}))
        else:
            items.append(HealthItem("health_power_draw", "power", "ok", {"draw": draw}))
    if hard := hard_throttle(health):
        items.append(
            HealthItem("health_throttled", "throttle", "warn", {"reasons": ", ".join(hard)})
        )
    return items


def _ecc(health: GpuHealthReading) -> list[HealthItem]:
    if not health.ecc_enabled:
        key = "health_ecc_off" if health.ecc_enabled is False else "health_ecc_unknown"
        return [HealthItem(key, "ecc")]
    uncorrected = health.ecc_volatile_uncorrected or 0
    params: dict[str, object] = {
        "corrected": _count(health.ecc_volatile_corrected),
        "uncorrected": _count(health.ecc_volatile_uncorrected),
        "aggregate_uncorrected": _count(health.ecc_aggregate_uncorrected),
    }
    return [HealthItem("health_ecc", "ecc", "bad" if uncorrected else "ok", params)]


def _memory(health: GpuHealthReading) -> list[HealthItem]:
    """Remapped rows (Ampere and later) or retired pages (before), whichever the GPU has."""
    items = []
    if (
        health.remapped_rows_correctable is not None
        or health.remapped_rows_uncorrectable is not None
    ):
        state: State = (
            "bad" if health.remapping_failed else "warn" if health.remapping_pending else "ok"
        )
        params = {
            "correctable": _count(health.remapped_rows_correctable),
            "uncorrectable": _count(health.remapped_rows_uncorrectable),
        }
        failed: State = "bad" if health.remapping_failed else state
        items.append(HealthItem("health_remapped", "remapped", failed, params))
    if health.retired_pages_single_bit is not None or health.retired_pages_double_bit is not None:
        pending: State = "warn" if health.retired_pages_pending else "ok"
        params = {
            "single": _count(health.retired_pages_single_bit),
            "double": _count(health.retired_pages_double_bit),
        }
        items.append(HealthItem("health_retired", "retired", pending, params))
    return items


def _xid(health: GpuHealthReading) -> HealthItem:
    if not health.xid_events:
        return HealthItem("health_no_xid" if health.xids_watched else "health_xid_unwatched", "xid")
    codes = ", ".join(str(e.xid) for e in health.xid_events[-5:])
    last = last_xid_at(health)
    state: State = "bad" if hardware_xids(health) else "warn"
    at = last.strftime("%Y-%m-%d %H:%M:%S UTC") if last else "?"
    return HealthItem("health_xid", "xid", state, {"codes": codes, "at": at})


def _hot(celsius: int) -> State:
    return "warn" if celsius >= HOT_C else "ok"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)
