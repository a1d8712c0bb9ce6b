"""The nvidia-smi fallback on MIG nodes: `-L` listings from NVIDIA's GPU Operator docs, and
the reader on the real H200 MIG capture (CSV, `-L`) with its `-q -x` re-typed from the
capture's table (tests/agent/fixtures/nvidia-smi/h200-mig/q-x.xml).

A process on a MIG device carries its parent GPU's UUID: it stays on the parent, and the
MIG device in its GPU / compute instance lists it too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agent.collect import Collector
from app.agent.smi import SmiReader
from app.agent.smi_list import listed_mig_devices, mig_devices_from_list
from tests.agent.real_smi import EXTRACTED, REAL_SMI, CapturedSmi, needs_real_smi, real_text

pytestmark = needs_real_smi

H100_DOCS = "GPU-b4895dbf-9350-2524-a89b-98161ddd9fe4"
PARENT = "GPU-00000000-0000-0000-0000-000000000000"
H200_MIG = "linux-x86_64__nvidia-h200-mig__590.48.01"
XML = Path(__file__).parent / "fixtures" / "nvidia-smi" / "h200-mig" / "q-x.xml"


@pytest.mark.parametrize(
    ("file", "profiles", "first_uuid"),
    [
        (
            "gpu-operator-docs.mig-nvidia-smi.txt",
            ["1g.10gb"] * 7,
            "MIG-3f6f389f-b0cc-5e5c-8e32-eaa8fd067902",
        ),
        (
            "gpu-operator-docs.mig-mixed-nvidia-smi.txt",
            ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
            "MIG-7089d0f3-293f-58c9-8f8c-5ea666eedbde",
        ),
    ],
)
def test_listed_mig_devices_real_docs_listing_gives_the_h100_slices(
    file: str, profiles: list[str], first_uuid: str
) -> None:
    listing = listed_mig_devices(real_text(REAL_SMI / file))

    assert list(listing) == [H100_DOCS]
    devices = listing[H100_DOCS]
    assert [d.profile for d in devices] == profiles
    assert [d.index for d in devices] == list(range(len(profiles)))
    assert devices[0].uuid == first_uuid
    assert len({d.uuid for d in devices}) == len(profiles)


def test_mig_devices_from_list_real_docs_listing_has_no_memory() -> None:
    devices = mig_devices_from_list(real_text(REAL_SMI / "gpu-operator-docs.mig-nvidia-smi.txt"))

    assert {(m.memory_total_mib, m.gpu_instance, m.processes) for m in devices[H100_DOCS]} == {
        (None, None, ())
    }


def _h200_mig(*, listing: bool = True, xml: bool = True) -> tuple[SmiReader, CapturedSmi]:
    fake = CapturedSmi(
        gpu_csv=real_text(EXTRACTED / f"{H200_MIG}.query-gpu.load.csv"),
        apps_csv=real_text(EXTRACTED / f"{H200_MIG}.query-compute-apps.load.csv"),
        listing=real_text(EXTRACTED / f"{H200_MIG}.nvidia-smi-L.txt") if listing else None,
        xml=XML.read_text() if xml else None,
    )
    return SmiReader(run=fake, which=lambda name: f"/usr/bin/{name}"), fake


def test_smi_reader_real_h200_mig_runs_list_and_xml_after_the_csv() -> None:
    reader, fake = _h200_mig()

    reader.read()

    assert [call[1:] for call in fake.calls[2:]] == [["-L"], ["-q", "-x"]]


def test_smi_reader_real_h200_mig_devices_get_memory_and_instance_ids() -> None:
    reader, _ = _h200_mig()

    (gpu,) = reader.read().gpus

    assert [
        (m.uuid[:12], m.profile, m.gpu_instance, m.compute_instance, m.memory_total_mib)
        for m in gpu.mig_devices
    ] == [
        ("MIG-00000000", "1c.3g.71gb", 2, 0, 71424),
        ("MIG-00000001", "2c.3g.71gb", 2, 1, 71424),
        ("MIG-00000002", "2g.35gb", 3, 0, 33280),
        ("MIG-00000003", "1g.18gb", 9, 0, 16384),
        ("MIG-00000004", "1g.18gb", 10, 0, 16384),
    ]
    assert [m.memory_used_mib for m in gpu.mig_devices] == [16925, 16925, 17, 9, 9]


def test_smi_reader_real_h200_mig_processes_stay_on_parent_and_land_on_their_slice() -> None:
    reader, _ = _h200_mig()

    readings = reader.read()

    (gpu,) = readings.gpus
    expected = [(12249, 2194), (12250, 1170), (12267, 13526)]
    assert gpu.uuid == PARENT
    assert [(p.pid, p.used_memory_mib) for p in gpu.processes] == expected
    assert [[p.pid for p in m.processes] for m in gpu.mig_devices] == [
        [],
        [12249, 12250, 12267],
        [],
        [],
        [],
    ]
    assert readings.problems == ()


def test_smi_reader_real_h200_mig_failed_xml_keeps_listed_devices_and_says_so() -> None:
    reader, _ = _h200_mig(xml=False)

    readings = reader.read()

    devices = readings.gpus[0].mig_devices
    profiles = ["1c.3g.71gb", "2c.3g.71gb", "2g.35gb", "1g.18gb", "1g.18gb"]
    assert [m.profile for m in devices] == profiles
    assert {(m.memory_total_mib, m.processes) for m in devices} == {(None, ())}
    assert readings.problems == ("nvidia-smi -q -x failed (exit 9)",)


def test_smi_reader_real_h200_mig_failed_list_leaves_unnamed_devices_out() -> None:
    reader, _ = _h200_mig(listing=False)

    readings = reader.read()

    assert readings.gpus[0].mig_devices == ()
    assert readings.gpus[0].processes[0].pid == 12249
    assert readings.problems == (
        "nvidia-smi -L failed (exit 9)",
        f"5 MIG devices of {PARENT} left out: nvidia-smi -L did not name them",
    )


def test_collector_real_h200_mig_report_lists_processes_per_mig_device() -> None:
    reader, _ = _h200_mig()
    collector = Collector(
        node="gpu-node-1",
        readers=[reader],
        proc_root=Path("/nonexistent-proc"),
        clock=lambda: datetime(2026, 7, 3, tzinfo=UTC),
        agent_version="test",
    )

    report = collector.collect()

    (gpu,) = report.gpus
    assert (report.source, report.error, gpu.mig_mode, gpu.utilization_pct) == (
        "nvidia-smi",
        None,
        "enabled",
        None,
    )
    assert [len(m.processes) for m in gpu.mig_devices] == [0, 3, 0, 0, 0]
    assert gpu.mig_devices[1].processes[2].command == "./gpu_burn"
    assert {p.pod_uid for p in gpu.processes} == {None}
