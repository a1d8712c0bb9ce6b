"""GPU health through NVML: temperature, power, clocks-event reasons, ECC, retired memory.

Each call is optional, as everywhere in the NVML reader: Not Supported (no ECC on a
consumer card, no row remapping before Ampere, no page retirement after it) becomes None.
NVML names and units: temperature in °C, power in milliwatts, reasons as a bit mask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from app.domain.health import GpuHealthReading, ThrottleReason, XidEvent

_T = TypeVar("_T")

# Clocks-event reason -> (pynvml constant name, its value in nvml.h, for older bindings).
_REASON_BITS: tuple[tuple[ThrottleReason, str, int], ...] = (
    ("gpu_idle", "nvmlClocksEventReasonGpuIdle", 0x1),
    ("applications_clocks_setting", "nvmlClocksEventReasonApplicationsClocksSetting", 0x2),
    ("sw_power_cap", "nvmlClocksEventReasonSwPowerCap", 0x4),
    ("hw_slowdown", "nvmlClocksEventReasonHwSlowdown", 0x8),
    ("sync_boost", "nvmlClocksEventReasonSyncBoost", 0x10),
    ("sw_thermal_slowdown", "nvmlClocksEventReasonSwThermalSlowdown", 0x20),
    ("hw_thermal_slowdown", "nvmlClocksEventReasonHwThermalSlowdown", 0x40),
    ("hw_power_brake_slowdown", "nvmlClocksEventReasonHwPowerBrakeSlowdown", 0x80),
    ("display_clocks_setting", "nvmlClocksEventReasonDisplayClockSetting", 0x100),
)


def read_health(
    nvml: Any, handle: Any, *, xid_events: Sequence[XidEvent] = (), xids_watched: bool = False
) -> GpuHealthReading:
    """Every health reading of one GPU handle; what NVML cannot give stays None.

    A call answered GPU_IS_LOST (the handle was had, then the GPU fell off the bus) marks
    the reading `lost`.
    """
    lost: list[bool] = []

    def get(call: Callable[[], _T]) -> _T | None:
        try:
            return call()
        except nvml.NVMLError as exc:
            lost.append(isinstance(exc, nvml.NVMLError_GpuIsLost))
            return None

    ecc_mode = get(lambda: nvml.nvmlDeviceGetEccMode(handle))
    ecc_on = None if not ecc_mode else ecc_mode[0] == nvml.NVML_FEATURE_ENABLED

    def ecc(kind: int, counter: int) -> int | None:
        if not ecc_on:
            return None
        value = get(lambda: nvml.nvmlDeviceGetTotalEccErrors(handle, kind, counter))
        return None if value is None else int(value)

    corrected, uncorrected = (
        nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
        nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
    )
    volatile, aggregate = nvml.NVML_VOLATILE_ECC, nvml.NVML_AGGREGATE_ECC
    remapped = get(lambda: nvml.nvmlDeviceGetRemappedRows(handle))
    pending_pages = get(lambda: nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle))
    return GpuHealthReading(
        temperature_c=get(
            lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
        ),
        power_draw_w=_watts(get(lambda: nvml.nvmlDeviceGetPowerUsage(handle))),
        power_limit_w=_watts(get(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))),
        throttle_reasons=_reasons(nvml, get(lambda: _reason_mask(nvml, handle))),
        ecc_enabled=ecc_on,
        ecc_volatile_corrected=ecc(corrected, volatile),
        ecc_volatile_uncorrected=ecc(uncorrected, volatile),
        ecc_aggregate_corrected=ecc(corrected, aggregate),
        ecc_aggregate_uncorrected=ecc(uncorrected, aggregate),
        retired_pages_single_bit=_pages(get, nvml, handle, "MULTIPLE_SINGLE_BIT_ECC_ERRORS"),
        retired_pages_double_bit=_pages(get, nvml, handle, "DOUBLE_BIT_ECC_ERROR"),
        retired_pages_pending=None
        if pending_pages is None
        else pending_pages == nvml.NVML_FEATURE_ENABLED,
        remapped_rows_correctable=None if remapped is None else int(remapped[0]),
        remapped_rows_uncorrectable=None if remapped is None else int(remapped[1]),
        remapping_pending=None if remapped is None else bool(remapped[2]),
        remapping_failed=None if remapped is None else bool(remapped[3]),
        xid_events=list(xid_events)[-64:],
        xids_watched=xids_watched,
        lost=any(lost),
    )


def _reason_mask(nvml: Any, handle: Any) -> int:
    """The active clocks-event reasons; the older `Throttle` name on older drivers."""
    try:
        return int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except (nvml.NVMLError_FunctionNotFound, AttributeError):
        return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def _reasons(nvml: Any, mask: int | None) -> list[ThrottleReason] | None:
    if mask is None:
        return None
    return [reason for reason, name, bit in _REASON_BITS if mask & int(getattr(nvml, name, bit))]


def _pages(
    get: Callable[[Callable[[], Any]], Any], nvml: Any, handle: Any, cause: str
) -> int | None:
    code = getattr(nvml, f"NVML_PAGE_RETIREMENT_CAUSE_{cause}")
    pages = get(lambda: nvml.nvmlDeviceGetRetiredPages(handle, code))
    return None if pages is None else len(pages)


def _watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else round(int(milliwatts) / 1000, 3)
