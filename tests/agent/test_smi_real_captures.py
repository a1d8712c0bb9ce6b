"""The nvidia-smi fallback on real captures (nvidia_gpu_exporter: `--query-gpu` and
`--query-compute-apps` CSV with headers and units, idle and under load, and `-L`).

Expected values are read off the capture files by eye; the CSVs hold ~200 columns in the
exporter's order, so these also prove columns are found by header name.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agent.collect import Collector
from app.agent.smi import APP_COLUMNS, GPU_COLUMNS, SmiReader, gpus_from_csv, parse_csv
from app.agent.smi_list import listed_mig_devices
from tests.agent.real_smi import EXTRACTED, CapturedSmi, needs_real_smi, real_text

pytestmark = needs_real_smi

PARENT = "GPU-00000000-0000-0000-0000-000000000000"
H200 = "linux-x86_64__nvidia-h200__590.48.01"
H200_MIG = "linux-x86_64__nvidia-h200-mig__590.48.01"
H100 = "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01"
H100_MIG = "linux-x86_64__nvidia-h100-mig__590.48.01"
L40S = "linux-x86_64__nvidia-l40s__595.80"
RTX_4080 = "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05"
RTX_2080_WIN = "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62"


def _capture(name: str, part: str) -> str:
    return real_text(EXTRACTED / f"{name}.{part}")


# (capture, phase) -> name, memory total/used MiB, utilisation %, MIG mode, driver
GPU_ROWS = [
    (H200, "idle", "NVIDIA H200", 143771, 0, 0, "disabled", "590.48.01"),
    (H200, "load", "NVIDIA H200", 143771, 32362, 100, "disabled", "590.48.01"),
    (H200_MIG, "idle", "NVIDIA H200", 143771, 55, None, "enabled", "590.48.01"),
    (H200_MIG, "load", "NVIDIA H200", 143771, 16959, None, "enabled", "590.48.01"),
    (H100, "idle", "NVIDIA H100 80GB HBM3", 81559, 0, 0, "disabled", "590.48.01"),
    (H100, "load", "NVIDIA H100 80GB HBM3", 81559, 19818, 100, "disabled", "590.48.01"),
    (H100_MIG, "idle", "NVIDIA H100 80GB HBM3", 81559, 59, None, "enabled", "590.48.01"),
    (H100_MIG, "load", "NVIDIA H100 80GB HBM3", 81559, 11125, None, "enabled", "590.48.01"),
    (L40S, "idle", "NVIDIA L40S", 46068, 0, 100, None, "595.80"),
    (L40S, "load", "NVIDIA L40S", 46068, 1235, 9, None, "595.80"),
    (RTX_4080, "idle", "NVIDIA GeForce RTX 4080 SUPER", 16376, 596, 0, None, "595.71.05"),
    (RTX_4080, "load", "NVIDIA GeForce RTX 4080 SUPER", 16376, 1474, 7, None, "595.71.05"),
    (RTX_2080_WIN, "idle", "NVIDIA GeForce RTX 2080 SUPER", 8192, 797, 0, None, "610.62"),
    (RTX_2080_WIN, "load", "NVIDIA GeForce RTX 2080 SUPER", 8192, 1366, 7, None, "610.62"),
]


@pytest.mark.parametrize(
    ("capture", "phase", "name", "total", "used", "util", "mig", "driver"), GPU_ROWS
)
def test_gpus_from_csv_real_query_gpu_capture_gives_one_gpu_with_its_figures(
    capture: str,
    phase: str,
    name: str,
    total: int,
    used: int,
    util: int | None,
    mig: str | None,
    driver: str,
) -> None:
    readings = gpus_from_csv(_capture(capture, f"query-gpu.{phase}.csv"), "")

    (gpu,) = readings.gpus
    assert (gpu.index, gpu.uuid, gpu.name) == (0, PARENT, name)
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.utilization_pct) == (total, used, util)
    assert (gpu.mig_mode, readings.driver_version, readings.problems) == (mig, driver, ())


# (capture, phase) -> (pid, used MiB) of each compute process, in the capture's order
MEMHOG_AND_BURN = {
    H200: [(10291, 2566), (10293, 1542), (10309, 28234)],
    H200_MIG: [(12249, 2194), (12250, 1170), (12267, 13526)],
    H100: [(11327, 2566), (11328, 1542), (11345, 15690)],
    H100_MIG: [(21180, 2296), (21181, 1272), (21198, 7484)],
}
PROCESS_ROWS = [
    *[(capture, "idle", []) for capture in MEMHOG_AND_BURN],
    *[(capture, "load", expected) for capture, expected in MEMHOG_AND_BURN.items()],
    (L40S, "idle", []),
    (L40S, "load", [(20037, 538), (20038, 681)]),
    (RTX_4080, "idle", [(2165, 25)]),
    (RTX_4080, "load", [(2165, 25), (5022, 503), (5021, 360)]),
]


@pytest.mark.parametrize(("capture", "phase", "expected"), PROCESS_ROWS)
def test_gpus_from_csv_real_compute_apps_capture_lands_on_the_gpu(
    capture: str, phase: str, expected: list[tuple[int, int]]
) -> None:
    readings = gpus_from_csv(
        _capture(capture, f"query-gpu.{phase}.csv"),
        _capture(capture, f"query-compute-apps.{phase}.csv"),
    )

    (gpu,) = readings.gpus
    assert [(p.pid, p.used_memory_mib) for p in gpu.processes] == expected
    assert readings.problems == ()


@pytest.mark.parametrize(("phase", "count"), [("idle", 19), ("load", 21)])
def test_gpus_from_csv_real_windows_wddm_processes_have_no_memory(phase: str, count: int) -> None:
    readings = gpus_from_csv(
        _capture(RTX_2080_WIN, f"query-gpu.{phase}.csv"),
        _capture(RTX_2080_WIN, f"query-compute-apps.{phase}.csv"),
    )

    (gpu,) = readings.gpus
    assert len(gpu.processes) == count
    assert {p.used_memory_mib for p in gpu.processes} == {None}
    assert gpu.processes[0].pid == 2140
    assert gpu.processes[0].name == "C:\\Windows\\System32\\dwm.exe"


def test_parse_csv_real_header_with_units_maps_used_gpu_memory_to_used_memory() -> None:
    rows = parse_csv(_capture(H200_MIG, "query-compute-apps.load.csv"), APP_COLUMNS)

    assert rows[2] == {
        "gpu_uuid": PARENT,
        "pid": "12267",
        "used_memory": "13526 MiB",
        "process_name": "./gpu_burn",
    }


@pytest.mark.parametrize(
    ("capture", "profiles"),
    [
        (H200_MIG, ["1c.3g.71gb", "2c.3g.71gb", "2g.35gb", "1g.18gb", "1g.18gb"]),
        (H100_MIG, ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]),
        (H200, []),
        (H100, []),
        (L40S, []),
        (RTX_4080, []),
        (RTX_2080_WIN, []),
    ],
)
def test_listed_mig_devices_real_list_capture_gives_profiles_in_device_order(
    capture: str, profiles: list[str]
) -> None:
    listing = listed_mig_devices(_capture(capture, "nvidia-smi-L.txt"))

    devices = listing.get(PARENT, ())
    assert [d.profile for d in devices] == profiles
    assert [d.index for d in devices] == list(range(len(profiles)))
    assert [d.uuid[:12] for d in devices] == [f"MIG-0000000{i}" for i in range(len(profiles))]


def _reader(capture: str, phase: str, *, xml: str | None = None) -> tuple[SmiReader, CapturedSmi]:
    fake = CapturedSmi(
        gpu_csv=_capture(capture, f"query-gpu.{phase}.csv"),
        apps_csv=_capture(capture, f"query-compute-apps.{phase}.csv"),
        listing=_capture(capture, "nvidia-smi-L.txt"),
        xml=xml,
    )
    return SmiReader(run=fake, which=lambda name: f"/usr/bin/{name}"), fake


@pytest.mark.parametrize(("capture", "phase"), [row[:2] for row in GPU_ROWS])
def test_collector_real_capture_gives_a_valid_nvidia_smi_report(capture: str, phase: str) -> None:
    reader, fake = _reader(capture, phase)
    collector = Collector(
        node="gpu-node-1",
        readers=[reader],
        proc_root=Path("/nonexistent-proc"),
        clock=lambda: datetime(2026, 7, 3, tzinfo=UTC),
        agent_version="test",
    )

    report = collector.collect()

    assert (report.source, len(report.gpus)) == ("nvidia-smi", 1)
    assert fake.calls[0][1] == "--query-gpu=" + ",".join(GPU_COLUMNS)
    mig_gpu = report.gpus[0].mig_mode == "enabled"
    # `-q -x` every pass for the GPU's health; `-L` only to name MIG devices.
    assert [call[1] for call in fake.calls[2:]] == (["-L", "-q"] if mig_gpu else ["-q"])
