"""nvidia-smi parsing (pure) on outputs of several GPU models, and the reader's fallbacks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from app.agent.readings import RawProcess, ReaderUnavailableError
from app.agent.smi import (
    APP_COLUMNS,
    GPU_COLUMNS,
    CommandResult,
    SmiReader,
    gpus_from_csv,
    parse_csv,
)

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"


def _fixture(model: str) -> tuple[str, str]:
    folder = FIXTURES / model
    return (folder / "query-gpu.csv").read_text(), (folder / "query-compute-apps.csv").read_text()


def test_gpus_from_csv_a100_mig_na_values_become_none() -> None:
    readings = gpus_from_csv(*_fixture("a100-80gb-mig"))

    mig, plain = readings.gpus
    assert readings.source == "nvidia-smi"
    assert readings.driver_version == "535.129.03"
    assert (mig.name, mig.memory_total_mib, mig.memory_used_mib) == (
        "NVIDIA A100-SXM4-80GB",
        81920,
        19535,
    )
    assert (mig.mig_mode, mig.utilization_pct) == ("enabled", None)
    assert mig.processes == (
        RawProcess(184233, None, "/usr/bin/python3"),
        RawProcess(184391, None, "/opt/conda/bin/python"),
    )
    assert (plain.mig_mode, plain.utilization_pct) == ("disabled", 87)
    assert plain.processes == (RawProcess(201877, 40538, "/opt/conda/bin/python3.10"),)


def test_gpus_from_csv_rtx4090_no_mig_and_two_processes() -> None:
    (gpu,) = gpus_from_csv(*_fixture("rtx-4090")).gpus

    assert gpu.uuid == "GPU-2f9b7e6a-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.utilization_pct) == (24564, 21873, 97)
    assert gpu.mig_mode is None
    assert [p.pid for p in gpu.processes] == [3121, 48213]


def test_gpus_from_csv_h100_processes_land_on_their_gpus() -> None:
    readings = gpus_from_csv(*_fixture("h100-80gb"))

    assert [gpu.index for gpu in readings.gpus] == [0, 1, 2, 3]
    assert [len(gpu.processes) for gpu in readings.gpus] == [1, 1, 0, 0]
    assert readings.gpus[1].processes[0] == RawProcess(2219044, 72300, "/usr/bin/python")
    assert {gpu.memory_total_mib for gpu in readings.gpus} == {81559}


def test_gpus_from_csv_t4_empty_process_output_gives_no_processes() -> None:
    readings = gpus_from_csv(*_fixture("t4"))

    (gpu,) = readings.gpus
    assert (gpu.name, gpu.memory_total_mib, gpu.processes) == ("Tesla T4", 15360, ())
    assert readings.driver_version == "470.223.02"


def test_gpus_from_csv_gb10_unified_memory_is_none() -> None:
    (gpu,) = gpus_from_csv(*_fixture("gb10-dgx-spark")).gpus

    assert gpu.name == "NVIDIA GB10"
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (None, None)
    assert gpu.utilization_pct == 3
    assert gpu.processes == (RawProcess(5512, 3280, "/usr/bin/python3"),)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("0,GPU-a,Tesla T4,15360,0,0,[N/A],470.1", ("15360", None)),
        ("  0 ,  GPU-a ,  Tesla T4  ,  15360  , 0 , 0 , N/A , 470.1 ", ("15360", None)),
        ("0, GPU-a, Tesla T4, [Not Supported], 0, 0, Disabled, 470.1", (None, "Disabled")),
        ("0, GPU-a, Tesla T4, [Unknown Error], 0, 0, [Insufficient Permissions], x", (None, None)),
        ("0, GPU-a, Tesla T4, 15360, 0, 0, Disabled, 470.1, extra, columns", ("15360", "Disabled")),
        ("0, GPU-a, Tesla T4, 15360", ("15360", None)),
    ],
)
def test_parse_csv_odd_values_and_spacing_are_tolerated(
    line: str, expected: tuple[str | None, str | None]
) -> None:
    (row,) = parse_csv(line + "\n", GPU_COLUMNS)

    assert row["uuid"] == "GPU-a"
    assert row["name"] == "Tesla T4"
    assert (row["memory.total"], row["mig.mode.current"]) == expected


def test_parse_csv_header_and_blank_lines_are_skipped() -> None:
    text = "\n\ngpu_uuid, pid, used_memory [MiB], process_name\nGPU-a, 12, 34 MiB, python\n\n"

    rows = parse_csv(text, APP_COLUMNS)

    assert rows == [
        {"gpu_uuid": "GPU-a", "pid": "12", "used_memory": "34 MiB", "process_name": "python"}
    ]


def test_parse_csv_process_name_keeps_its_commas() -> None:
    (row,) = parse_csv("GPU-a, 12, 34, /opt/my,odd dir/python\n", APP_COLUMNS)

    assert row["process_name"] == "/opt/my,odd dir/python"


def test_gpus_from_csv_unit_suffixes_and_missing_uuid_do_not_crash() -> None:
    gpu_text = "0, GPU-a, Tesla T4, 15360 MiB, 12 MiB, 45 %, [N/A], 470.1\n1, [N/A], Tesla T4\n"

    readings = gpus_from_csv(gpu_text, "GPU-b, 9, 1, python\n")

    (gpu,) = readings.gpus
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.utilization_pct) == (15360, 12, 45)
    assert readings.problems == ("GPU 1 has no UUID", "process on unknown GPU GPU-b")


def test_gpus_from_csv_empty_output_gives_no_gpus() -> None:
    readings = gpus_from_csv("", "")

    assert (readings.gpus, readings.driver_version, readings.problems) == ((), None, ())


class _FakeSmi:
    """Answers nvidia-smi invocations from fixture text; knows only `known` GPU fields."""

    def __init__(self, model: str, *, known: Sequence[str] = GPU_COLUMNS) -> None:
        self.model = model
        self.gpu_text, self.apps_text = _fixture(model)
        self.known = known
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        query = argv[1]
        if query == "-L":
            listing = FIXTURES / self.model / "list.txt"
            return (
                CommandResult(0, listing.read_text()) if listing.exists() else CommandResult(9, "")
            )
        if query == "-q":
            xml = FIXTURES / self.model / "q-x.xml"
            return CommandResult(0, xml.read_text()) if xml.exists() else CommandResult(9, "")
        if query.startswith("--query-compute-apps="):
            return CommandResult(0, self.apps_text)
        for column in query.split("=", 1)[1].split(","):
            if column not in self.known:
                return CommandResult(2, f'Field "{column}" is not a valid field to query.\n\n', "")
        columns = query.split("=", 1)[1].split(",")
        lines = []
        for line in self.gpu_text.splitlines():
            values = dict(zip(GPU_COLUMNS, line.split(", "), strict=True))
            lines.append(", ".join(values[column] for column in columns))
        return CommandResult(0, "\n".join(lines) + "\n")


def test_smi_reader_runs_both_queries_with_csv_flags_then_the_xml_for_health() -> None:
    fake = _FakeSmi("rtx-4090")

    readings = SmiReader(run=fake, which=lambda name: f"/usr/bin/{name}").read()

    assert [call[0] for call in fake.calls] == ["/usr/bin/nvidia-smi"] * 3
    assert fake.calls[0][1] == "--query-gpu=" + ",".join(GPU_COLUMNS)
    assert fake.calls[1][1] == "--query-compute-apps=gpu_uuid,pid,used_memory,process_name"
    assert all(call[2] == "--format=csv,noheader,nounits" for call in fake.calls[:2])
    assert fake.calls[2][1:] == ["-q", "-x"]
    assert readings.gpus[0].utilization_pct == 97
    # this fixture has no XML: the GPUs stay, their health unknown, and the report says why
    assert readings.gpus[0].health is None
    assert readings.problems == ("nvidia-smi -q -x failed (exit 9)",)


def test_smi_reader_old_nvidia_smi_without_mig_field_drops_it() -> None:
    fake = _FakeSmi("t4", known=[c for c in GPU_COLUMNS if c != "mig.mode.current"])
    reader = SmiReader(run=fake, which=lambda name: name)

    first = reader.read()
    reader.read()

    assert first.gpus[0].name == "Tesla T4"
    assert first.gpus[0].mig_mode is None
    assert first.driver_version == "470.223.02"
    assert len(fake.calls) == 7  # one refused query, then 3 + 3 with the field remembered


def test_smi_reader_not_on_path_is_driver_missing() -> None:
    with pytest.raises(ReaderUnavailableError, match="nvidia-smi not on PATH") as caught:
        SmiReader(run=lambda argv: CommandResult(0, ""), which=lambda name: None).read()

    assert caught.value.driver_missing


def test_smi_reader_failing_command_reports_its_first_line() -> None:
    message = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    reader = SmiReader(run=lambda argv: CommandResult(9, message), which=lambda name: name)

    with pytest.raises(ReaderUnavailableError, match=r"exit 9\): NVIDIA-SMI has failed"):
        reader.read()


def test_smi_reader_mig_without_xml_lists_mig_devices_from_list() -> None:
    fake = _FakeSmi("a100-80gb-mig")

    readings = SmiReader(run=fake, which=lambda name: name).read()

    assert [call[1:] for call in fake.calls][-2:] == [["-L"], ["-q", "-x"]]
    assert readings.problems == ("nvidia-smi -q -x failed (exit 9)",)
    assert [(m.profile, m.uuid) for m in readings.gpus[0].mig_devices] == [
        ("3g.40gb", "MIG-7f3e1c2a-9b4d-5e6f-8a1b-2c3d4e5f6a70"),
        ("2g.20gb", "MIG-1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d"),
        ("1g.10gb", "MIG-9d8c7b6a-5f4e-5d3c-9b2a-1f0e9d8c7b6a"),
        ("1g.10gb", "MIG-0f1e2d3c-4b5a-5968-8776-5a4b3c2d1e0f"),
    ]
    assert readings.gpus[1].mig_devices == ()


def test_smi_reader_without_mig_gpus_does_not_list() -> None:
    fake = _FakeSmi("h100-80gb")

    SmiReader(run=fake, which=lambda name: name).read()

    assert [call[1] for call in fake.calls if call[1] in ("-L", "-q")] == ["-q"]


def test_parse_csv_header_in_any_order_maps_columns_by_name() -> None:
    text = (
        "pid, process_name, gpu_uuid, used_gpu_memory [MiB]\n"
        "12, /opt/my,odd dir/python, GPU-a, 34 MiB\n"
        "13, [N/A], GPU-b, [N/A]\n"
    )

    rows = parse_csv(text, APP_COLUMNS)

    assert rows == [
        {
            "gpu_uuid": "GPU-a",
            "pid": "12",
            "used_memory": "34 MiB",
            "process_name": "/opt/my,odd dir/python",
        },
        {"gpu_uuid": "GPU-b", "pid": "13", "used_memory": None, "process_name": None},
    ]


def test_parse_csv_header_without_a_requested_column_gives_none() -> None:
    (row,) = parse_csv("index, uuid, name\n0, GPU-a, Tesla T4\n", GPU_COLUMNS)

    assert (row["uuid"], row["name"], row["memory.total"], row["driver_version"]) == (
        "GPU-a",
        "Tesla T4",
        None,
        None,
    )
