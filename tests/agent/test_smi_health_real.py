"""GPU health from real `nvidia-smi -q -x` logs (telegraf's fixtures: v12 and v13 DTDs,
drivers 515 to 590), read at test time from ../shared; expected values read off the XML."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.agent.collect import Collector
from app.agent.smi import SmiReader
from app.agent.smi_xml import parse_xml
from app.domain.health import GpuHealthReading
from tests.agent.real_smi import TELEGRAF_XML, CapturedSmi, needs_real_smi, real_text

pytestmark = needs_real_smi

ZERO_ECC = {
    "ecc_enabled": True,
    "ecc_volatile_corrected": 0,
    "ecc_volatile_uncorrected": 0,
    "ecc_aggregate_corrected": 0,
    "ecc_aggregate_uncorrected": 0,
}
NO_REMAPS = {
    "remapped_rows_correctable": 0,
    "remapped_rows_uncorrectable": 0,
    "remapping_pending": False,
    "remapping_failed": False,
}

# file -> per GPU, every health field the XML gives (the others are N/A: None)
HEALTH: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "a100-sxm4-v12.xml",  # v12: clocks_event_reasons, gpu_power_readings/power_draw
        [
            {
                "temperature_c": 27,
                "power_draw_w": 67.03,
                "power_limit_w": 500.0,
                "throttle_reasons": [],
                **ZERO_ECC,
            }
        ],
    ),
    (
        "a10g.xml",  # older: clocks_throttle_reasons, power_readings/power_limit
        [
            {
                "temperature_c": 17,
                "power_draw_w": 25.58,
                "power_limit_w": 300.0,
                "throttle_reasons": ["gpu_idle"],
                **ZERO_ECC,
                **NO_REMAPS,
            }
        ],
    ),
    (
        "tesla-t4.xml",  # pre-Ampere: retired pages instead of remapped rows
        [
            {
                "temperature_c": 40,
                "power_draw_w": 26.78,
                "power_limit_w": 70.0,
                "throttle_reasons": [],
                **ZERO_ECC,
                "retired_pages_single_bit": 0,
                "retired_pages_double_bit": 0,
                "retired_pages_pending": False,
            }
        ],
    ),
    (
        "dual_a5000-v13.xml",  # v13: instant_power_draw, split SRAM counters, ECC off
        [
            {
                "temperature_c": 13,
                "power_draw_w": 6.52,
                "power_limit_w": 230.0,
                "throttle_reasons": ["gpu_idle"],
                "ecc_enabled": False,
                **NO_REMAPS,
            },
            {
                "temperature_c": 15,
                "power_draw_w": 13.59,
                "power_limit_w": 230.0,
                "throttle_reasons": ["gpu_idle"],
                "ecc_enabled": False,
                **NO_REMAPS,
            },
        ],
    ),
    (
        "rtx-3080-v12.xml",  # Windows, GeForce: no ECC block it can fill, no remapping
        [
            {
                "temperature_c": 31,
                "power_draw_w": 22.78,
                "power_limit_w": 336.0,
                "throttle_reasons": ["gpu_idle"],
            }
        ],
    ),
]


def _xml(name: str) -> str:
    return real_text(TELEGRAF_XML / name)


@pytest.mark.parametrize(("name", "expected"), HEALTH, ids=[name for name, _ in HEALTH])
def test_smi_xml_real_health_fields(name: str, expected: list[dict[str, Any]]) -> None:
    log = parse_xml(_xml(name))
    assert [gpu.health for gpu in log.gpus] == [GpuHealthReading(**fields) for fields in expected]


def test_smi_reader_real_xml_puts_health_on_the_csv_gpus(tmp_path: Path) -> None:
    """The fallback's pass: CSV for GPUs and processes, `-q -x` for health, joined on UUID."""
    log = parse_xml(_xml("dual_a5000-v13.xml"))
    uuids = [gpu.uuid for gpu in log.gpus]
    gpu_csv = "".join(
        f"{i}, {uuid}, NVIDIA RTX A5000, 24564, 300, 0, [N/A], 590.44.01\n"
        for i, uuid in enumerate(uuids)
    )
    fake = CapturedSmi(gpu_csv=gpu_csv, apps_csv="", xml=_xml("dual_a5000-v13.xml"))
    collector = Collector(
        node="gpu-node-1",
        readers=[SmiReader(run=fake, which=lambda name: name)],
        proc_root=tmp_path / "no-proc",
        clock=lambda: datetime(2026, 7, 3, tzinfo=UTC),
        agent_version="test",
    )

    report = collector.collect()

    assert [g.health.temperature_c if g.health else None for g in report.gpus] == [13, 15]
    assert [g.health.power_draw_w if g.health else None for g in report.gpus] == [6.52, 13.59]
    assert (
        report.model_dump(mode="json", by_alias=True)["gpus"][0]["health"]["ecc_enabled"] is False
    )
