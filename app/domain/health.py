"""GPU health as the agent reads it (NVML or `nvidia-smi -q -x`), and what it means.

Every field is optional: a GPU or driver that cannot say (consumer cards have no ECC, old
drivers no row remapping) reports null, which is "not available", never "healthy".
Reports of agents older than this block carry no `health` at all and still validate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import AwareDatetime, ConfigDict, Field, StrictBool, StrictInt

from app.domain.described import Described

# Far above any real GPU, far below what could overflow a sum in the engine.
MAX_COUNT = 1 << 40
MAX_WATTS = 100_000.0

Counter = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]
Watts = Annotated[float, Field(ge=0, le=MAX_WATTS)]

# The clocks-event (throttle) reasons, named as nvidia-smi -q -x names them without the
# `clocks_event_reason_` / `clocks_throttle_reason_` prefix, and as NVML's bit masks say.
ThrottleReason = Literal[
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clocks_setting",
]
THROTTLE_REASONS: tuple[str, ...] = get_args(ThrottleReason)
# Reasons that cut the clocks hard (hardware slowdown, thermal, power brake): the GPU
# delivers a fraction of its speed to whoever holds its slots.
HARD_THROTTLE: frozenset[str] = frozenset(
    {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"}
)

# XID codes that mean the hardware, not the application, failed (NVIDIA's XID catalogue):
# 48 double-bit ECC, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92 high
# single-bit ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP, 140 unrecovered ECC.
HARDWARE_XIDS: frozenset[int] = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140})
XID_FALLEN_OFF_BUS = 79


class _Strict(Described):
    # strict: `false` is not a wattage nor `0` a time, as the JSON Schema says
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class XidEvent(_Strict):
    """One XID error the driver raised on this GPU (NVML event set, since the agent started)."""

    xid: Annotated[StrictInt, Field(ge=0, le=1 << 16)]
    """The XID code, e.g. 79 (GPU fallen off the bus), 48 (double-bit ECC)"""
    at: AwareDatetime
    """When the agent received the event (UTC)"""


class GpuHealthReading(_Strict):
    """Temperature, power, throttling, ECC, retired memory and XID events of one GPU."""

    temperature_c: Annotated[StrictInt, Field(ge=-100, le=300)] | None = None
    """GPU core temperature in °C (nvidia-smi: temperature.gpu)"""
    power_draw_w: Watts | None = None
    """Power draw in watts (nvidia-smi: power.draw)"""
    power_limit_w: Watts | None = None
    """Enforced power limit in watts (nvidia-smi: power.limit)"""
    throttle_reasons: list[ThrottleReason] | None = Field(
        default=None,
        max_length=len(THROTTLE_REASONS),
    )
    """Active clocks-event (throttle) reasons; empty: none active; null: unknown (nvidia-smi:
    clocks_throttle_reasons.*)"""
    ecc_enabled: StrictBool | None = None
    """ECC mode is on (nvidia-smi: ecc.mode.current); null: no ECC"""
    ecc_volatile_corrected: Counter | None = None
    """Corrected ECC errors since the driver loaded"""
    ecc_volatile_uncorrected: Counter | None = None
    """Uncorrected ECC errors since the driver loaded"""
    ecc_aggregate_corrected: Counter | None = None
    """Corrected ECC errors over the GPU's lifetime"""
    ecc_aggregate_uncorrected: Counter | None = None
    """Uncorrected ECC errors over the GPU's lifetime"""
    retired_pages_single_bit: Counter | None = None
    """Pages retired for multiple single-bit ECC errors (pre-Ampere)"""
    retired_pages_double_bit: Counter | None = None
    """Pages retired for double-bit ECC errors (pre-Ampere)"""
    retired_pages_pending: StrictBool | None = None
    """A page waits for retirement: it takes effect on GPU reset"""
    remapped_rows_correctable: Counter | None = None
    """Rows remapped for correctable errors (Ampere and later)"""
    remapped_rows_uncorrectable: Counter | None = None
    """Rows remapped for uncorrectable errors (Ampere and later)"""
    remapping_pending: StrictBool | None = None
    """A row remap waits for a GPU reset"""
    remapping_failed: StrictBool | None = None
    """A row remap failed: the GPU should be replaced"""
    xid_events: list[XidEvent] = Field(default_factory=list, max_length=64)
    """The latest XID errors seen on this GPU (at most 64, oldest first)"""
    xids_watched: StrictBool = False
    """True when the agent watches the GPU's XID errors (NVML event set); false: XIDs unknown
    (nvidia-smi cannot say, or the GPU cannot report them)"""
    lost: StrictBool = False
    """The driver reports the GPU lost (NVML_ERROR_GPU_IS_LOST, XID 79): it has fallen off the bus
    """


def hardware_xids(health: GpuHealthReading) -> list[int]:
    """The hardware XID codes among the GPU's recent events, each once, in order seen."""
    seen: list[int] = []
    for event in health.xid_events:
        if event.xid in HARDWARE_XIDS and event.xid not in seen:
            seen.append(event.xid)
    return seen


def fallen_off_bus(health: GpuHealthReading) -> bool:
    """The GPU is gone from the PCIe bus: the driver says lost, or it raised XID 79."""
    return health.lost or any(e.xid == XID_FALLEN_OFF_BUS for e in health.xid_events)


def unhealthy_reasons(health: GpuHealthReading) -> list[str]:
    """Codes of what makes the GPU unfit for work (empty: nothing known against it).

    Not `lost` itself: a GPU fallen off the bus is its own, worse, finding.
    """
    reasons: list[str] = []
    if health.ecc_volatile_uncorrected:
        reasons.append("ecc-uncorrected")
    if health.remapping_failed:
        reasons.append("remapping-failed")
    if health.remapping_pending or health.retired_pages_pending:
        reasons.append("reset-pending")
    if any(xid != XID_FALLEN_OFF_BUS for xid in hardware_xids(health)):
        reasons.append("hardware-xid")
    return reasons


def hard_throttle(health: GpuHealthReading) -> list[str]:
    """The active throttle reasons that cut the clocks hard, in catalogue order."""
    active = set(health.throttle_reasons or ())
    return [reason for reason in THROTTLE_REASONS if reason in active and reason in HARD_THROTTLE]


def last_xid_at(health: GpuHealthReading) -> datetime | None:
    """When the newest XID event arrived, if any."""
    return max((e.at for e in health.xid_events), default=None)
