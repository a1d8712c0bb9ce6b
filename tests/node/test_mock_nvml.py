"""Our mock libnvidia-ml.so.1 through the agent's own NVML reader (pynvml, the real C ABI).

No root and no node: each case runs the reader in a child process whose loader finds the
mock first (LD_LIBRARY_PATH), with a machine file written for the case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.node.build import NodeUnavailable, mock_nvml_library

READ = """
import dataclasses, json
from app.agent.nvml import NvmlReader
reader = NvmlReader()
reading = dataclasses.asdict(reader.read())
print(json.dumps(reading, default=lambda model: model.model_dump(mode="json")))
reader.close()
"""


def _read(tmp_path: Path, machine: dict[str, Any], **env: str) -> dict[str, Any]:
    try:
        library = mock_nvml_library()
    except NodeUnavailable as exc:
        pytest.skip(f"mock NVML library: {exc}")
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(machine))
    done = subprocess.run(
        [sys.executable, "-c", READ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            "LD_LIBRARY_PATH": str(library.parent),
            "GPU_SLOTS_MOCK_NVML_CONFIG": str(path),
            **env,
        },
    )
    assert done.returncode == 0, done.stderr
    readings: dict[str, Any] = json.loads(done.stdout)
    return readings


MACHINE = {
    "driverVersion": "550.54.15",
    "gpus": [
        {
            "model": "A100-SXM4-80GB",
            "name": "NVIDIA A100-SXM4-80GB",
            "uuid": "GPU-11111111-2222-3333-4444-555555555555",
            "utilizationPct": 40,
            "processes": [{"pid": 4242, "usedMemoryMiB": 30000}],
        },
        {
            "model": "A100-SXM4-40GB",
            "uuid": "GPU-66666666-7777-8888-9999-000000000000",
            "migDevices": [
                {
                    "profile": "3g.20gb",
                    "uuid": "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                    "processes": [{"pid": 77, "usedMemoryMiB": 1000}],
                },
                {"profile": "1g.5gb"},
            ],
        },
    ],
}


def test_the_agent_reads_gpus_processes_and_mig_devices_through_the_mock(
    tmp_path: Path,
) -> None:
    readings = _read(tmp_path, MACHINE)

    assert (readings["source"], readings["driver_version"]) == ("nvml", "550.54.15")
    whole, mig = readings["gpus"]
    assert (whole["uuid"], whole["name"], whole["memory_total_mib"]) == (
        "GPU-11111111-2222-3333-4444-555555555555",
        "NVIDIA A100-SXM4-80GB",
        81920,
    )
    assert (whole["memory_used_mib"], whole["utilization_pct"], whole["mig_mode"]) == (
        30000,
        40,
        "disabled",
    )
    assert [(p["pid"], p["used_memory_mib"]) for p in whole["processes"]] == [(4242, 30000)]
    assert (mig["mig_mode"], mig["utilization_pct"]) == ("enabled", None)  # as NVML answers
    devices = [
        (d["uuid"], d["profile"], d["memory_total_mib"], d["memory_used_mib"])
        for d in mig["mig_devices"]
    ]
    assert devices[0] == ("MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "3g.20gb", 19968, 1000)
    assert devices[1][1:] == ("1g.5gb", 4864, 0) and devices[1][0].startswith("MIG-")


def test_nvidia_visible_devices_limits_what_the_mock_shows(tmp_path: Path) -> None:
    second = "GPU-66666666-7777-8888-9999-000000000000"

    readings = _read(tmp_path, MACHINE, NVIDIA_VISIBLE_DEVICES=second)

    assert [(g["index"], g["uuid"]) for g in readings["gpus"]] == [(0, second)]


def test_without_a_machine_file_nvml_is_unavailable_as_without_a_driver(tmp_path: Path) -> None:
    script = READ.split("reading = ")[0] + "reader.read()\n"
    try:
        library = mock_nvml_library()
    except NodeUnavailable as exc:
        pytest.skip(f"mock NVML library: {exc}")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            "LD_LIBRARY_PATH": str(library.parent),
            "GPU_SLOTS_MOCK_NVML_CONFIG": str(tmp_path / "absent.json"),
        },
    )
    assert done.returncode != 0
    assert "NVIDIA driver not loaded" in done.stderr
