"""One collection cycle: reader fallback order, attribution, the report the dashboard gets."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pynvml

from app.agent.collect import Collector
from app.agent.nvml import NvmlReader
from app.agent.readings import RawReadings
from app.agent.smi import SmiReader
from app.domain.report import AgentReport
from tests.agent.fake_nvml import GIB, MIB, FakeGpu, FakeNvml, uuid_for

FIXTURES = Path(__file__).parent / "fixtures"
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
POD_UID = "3f6c2a1e-8b4d-4c7a-9e21-5d0b7f8a6c13"
CONTAINER = "8a1f3e5c7b9d2f4a6c8e0b1d3f5a7c9e2b4d6f8a0c1e3b5d7f9a2c4e6b8d0f1a"


def _collector(*readers: object, proc_root: Path = FIXTURES / "proc") -> Collector:
    return Collector(
        node="gpu-node-1",
        readers=readers,  # type: ignore[arg-type]
        proc_root=proc_root,
        clock=lambda: NOW,
        agent_version="0.1.0",
    )


def _no_smi() -> SmiReader:
    return SmiReader(which=lambda name: None)


def test_collect_host_and_pod_process_on_same_gpu_are_told_apart() -> None:
    fake = FakeNvml(
        [
            FakeGpu(
                uuid=uuid_for(0),
                name="NVIDIA GeForce RTX 4090",
                memory_total_bytes=24564 * MIB,
                memory_used_bytes=21873 * MIB,
                utilization_pct=97,
                processes=[(3121, 17580 * MIB), (48213, 4026 * MIB), (77777, None)],
            )
        ]
    )

    report = _collector(NvmlReader(nvml=fake), _no_smi()).collect()

    assert (report.node, report.source, report.collected_at) == ("gpu-node-1", "nvml", NOW)
    assert report.error is None
    host, pod, unseen = report.gpus[0].processes
    assert (host.pid, host.pod_uid, host.container, host.user) == (3121, None, None, "root")
    assert host.command == "/home/alice/miniconda3/envs/train/bin/python train.py --epochs 10"
    assert host.used_memory_mib == 17580
    assert (pod.pid, pod.pod_uid, pod.container, pod.visible) == (48213, POD_UID, CONTAINER, True)
    assert (unseen.pid, unseen.visible, unseen.pod_uid, unseen.command) == (
        77777,
        False,
        None,
        None,
    )


def test_collect_report_round_trips_through_the_dashboard_schema() -> None:
    fake = FakeNvml([FakeGpu(uuid=uuid_for(i), processes=[(3121, GIB)]) for i in range(2)])
    report = _collector(NvmlReader(nvml=fake), _no_smi()).collect()

    body = report.model_dump(mode="json", by_alias=True)

    assert body["schema"] == 1
    assert body["collected_at"] == "2025-05-01T12:00:00Z"
    assert AgentReport.model_validate(body) == report


def test_collect_nvml_missing_falls_back_to_nvidia_smi_binary(tmp_path: Path) -> None:
    script = tmp_path / "nvidia-smi"
    folder = FIXTURES / "nvidia-smi" / "rtx-4090"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  --query-gpu=*) cat '{folder / 'query-gpu.csv'}' ;;\n"
        f"  --query-compute-apps=*) cat '{folder / 'query-compute-apps.csv'}' ;;\n"
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    nvml = NvmlReader(nvml=FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    smi = SmiReader(which=lambda name: str(tmp_path / name))

    report = _collector(nvml, smi).collect()

    assert report.source == "nvidia-smi"
    assert report.driver_version == "550.54.14"
    (gpu,) = report.gpus
    assert [(p.pid, p.pod_uid) for p in gpu.processes] == [(3121, None), (48213, POD_UID)]


def test_collect_no_driver_at_all_reports_source_none_with_reason() -> None:
    nvml = NvmlReader(nvml=FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))

    report = _collector(nvml, _no_smi()).collect()

    assert (report.source, report.gpus) == ("none", [])
    assert report.error == "no NVIDIA driver: NVML library not found and nvidia-smi not on PATH"


def test_collect_reader_bug_falls_through_to_next_reader() -> None:
    class Broken:
        label = "NVML"

        def read(self) -> RawReadings:
            raise AttributeError("module 'pynvml' has no attribute 'nvmlDeviceGetFoo'")

    report = _collector(Broken(), _no_smi()).collect()

    assert report.source == "none"
    assert report.error is not None
    assert report.error.startswith("no GPU reader worked: NVML failed: AttributeError(")


def test_collect_unreadable_gpu_is_named_in_error_while_others_report() -> None:
    fake = FakeNvml([FakeGpu(uuid=uuid_for(0)), FakeGpu(uuid=uuid_for(1), lost=True)])

    report = _collector(NvmlReader(nvml=fake), _no_smi()).collect()

    assert report.source == "nvml"
    assert [gpu.index for gpu in report.gpus] == [0]
    assert report.error == "GPU 1 unreadable through NVML: GPU is lost"
