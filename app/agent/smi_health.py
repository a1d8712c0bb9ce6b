"""GPU health from `nvidia-smi -q -x` (pure): what the XML of drivers 470 to 590 says.

The XML names fields differently across its DTD versions: `clocks_throttle_reasons`
(before v12) became `clocks_event_reasons`; ECC counts moved from `single_bit`/`double_bit`
totals to `sram_*`/`dram_*` (v13 splits `sram_uncorrectable` into parity and SEC-DED);
power sits in `power_readings` or `gpu_power_readings`, as `power_draw` or
`instant_power_draw`. `N/A` and `[Not Supported]` become None. The XML lists no XID
events (those need NVML's event set) and no "lost" state.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import get_args

from app.domain.health import GpuHealthReading, ThrottleReason

_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")
_UNKNOWN = {"n/a", "not supported", "unknown", "unknown error", ""}
_REASONS: tuple[ThrottleReason, ...] = get_args(ThrottleReason)
_POWER = ("gpu_power_readings", "power_readings")


def health_from_xml(gpu: ET.Element) -> GpuHealthReading:
    """The health readings of one `<gpu>` element."""
    remapped = gpu.find("remapped_rows")
    return GpuHealthReading(
        temperature_c=_int(gpu, "temperature/gpu_temp"),
        power_draw_w=_first_float(
            gpu,
            [
                f"{p}/{f}"
                for p in _POWER
                for f in ("power_draw", "instant_power_draw", "average_power_draw")
            ],
        ),
        power_limit_w=_first_float(
            gpu,
            [
                f"{p}/{f}"
                for p in _POWER
                for f in ("current_power_limit", "enforced_power_limit", "power_limit")
            ],
        ),
        throttle_reasons=_reasons(gpu),
        ecc_enabled=_flag(xml_text(gpu, "ecc_mode/current_ecc"), "enabled", "disabled"),
        ecc_volatile_corrected=_ecc(gpu, "volatile", corrected=True),
        ecc_volatile_uncorrected=_ecc(gpu, "volatile", corrected=False),
        ecc_aggregate_corrected=_ecc(gpu, "aggregate", corrected=True),
        ecc_aggregate_uncorrected=_ecc(gpu, "aggregate", corrected=False),
        retired_pages_single_bit=_int(
            gpu, "retired_pages/multiple_single_bit_retirement/retired_count"
        ),
        retired_pages_double_bit=_int(gpu, "retired_pages/double_bit_retirement/retired_count"),
        retired_pages_pending=_flag(xml_text(gpu, "retired_pages/pending_retirement"), "yes", "no"),
        remapped_rows_correctable=_int(remapped, "remapped_row_corr"),
        remapped_rows_uncorrectable=_int(remapped, "remapped_row_unc"),
        remapping_pending=_flag(xml_text(remapped, "remapped_row_pending"), "yes", "no"),
        remapping_failed=_flag(xml_text(remapped, "remapped_row_failure"), "yes", "no"),
    )


def _reasons(gpu: ET.Element) -> list[ThrottleReason] | None:
    """Active clocks-event reasons; None when the XML has no reasons block it can read."""
    for block, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        element = gpu.find(block)
        if element is None:
            continue
        states = {reason: xml_text(element, prefix + reason) for reason in _REASONS}
        if all(state is None for state in states.values()):
            return None
        return [reason for reason, state in states.items() if (state or "").lower() == "active"]
    return None


def _ecc(gpu: ET.Element, period: str, *, corrected: bool) -> int | None:
    """Corrected or uncorrected ECC errors of one period, summed over SRAM and DRAM."""
    block = gpu.find(f"ecc_errors/{period}")
    if block is None:
        return None
    if corrected:
        names = ["sram_correctable", "dram_correctable", "single_bit/total"]
    else:
        names = [
            "sram_uncorrectable",
            "sram_uncorrectable_parity",
            "sram_uncorrectable_secded",
            "dram_uncorrectable",
            "double_bit/total",
        ]
    values = [value for name in names if (value := _int(block, name)) is not None]
    return sum(values) if values else None


def xml_text(element: ET.Element | None, path: str) -> str | None:
    """The stripped text at path; N/A, [Not Supported] and friends become None."""
    if element is None:
        return None
    raw = element.findtext(path)
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        return None
    return None if text.lower() in _UNKNOWN else text


def _float(element: ET.Element | None, path: str) -> float | None:
    text = xml_text(element, path)
    match = _NUMBER.match(text) if text else None
    return float(match.group(1)) if match else None


def _first_float(element: ET.Element, paths: list[str]) -> float | None:
    for path in paths:
        value = _float(element, path)
        if value is not None:
            return value
    return None


def _int(element: ET.Element | None, path: str) -> int | None:
    value = _float(element, path)
    return None if value is None else int(value)


def _flag(text: str | None, yes: str, no: str) -> bool | None:
    lowered = (text or "").lower()
    if lowered == yes:
        return True
    return False if lowered == no else None
