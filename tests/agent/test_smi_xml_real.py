"""`nvidia-smi -q -x` parsing on real XML logs (telegraf's fixtures: v12 and v13 layouts,
A100 with MIG, two A5000s, Windows RTX 3080), and broken input.

Expected values are read off the XML files by eye.
"""

from __future__ import annotations

import pytest

from app.agent.smi_list import listed_mig_devices
from app.agent.smi_xml import SmiXmlError, parse_xml, readings_from_xml
from tests.agent.real_smi import TELEGRAF_XML, needs_real_smi, real_text

pytestmark = needs_real_smi

A100_UUID = "GPU-513536b6-7d19-9063-b049-1e69664bb298"

# file -> driver, then per GPU: (uuid, name, memory total/used MiB, utilisation %, MIG mode)
GPUS = [
    (
        "a100-sxm4-v12.xml",
        "535.54.03",
        [(A100_UUID, "NVIDIA A100-SXM4-80GB", 81920, 50, None, "enabled")],
    ),
    (
        "a10g.xml",
        "515.105.01",
        [("GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94", "NVIDIA A10G", 23028, 22, 0, None)],
    ),
    (
        "tesla-t4.xml",
        "515.105.01",
        [("GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "Tesla T4", 15360, 1032, 0, None)],
    ),
    (
        "rtx-3080-v12.xml",
        "536.40",
        [
            (
                "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4",
                "NVIDIA GeForce RTX 3080",
                10240,
                1128,
                0,
                None,
            )
        ],
    ),
    (
        "rtx-4000-sff-ada-v13.xml",
        "595.84",
        [
            (
                "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026",
                "NVIDIA RTX 4000 SFF Ada Generation",
                20475,
                3534,
                0,
                None,
            )
        ],
    ),
    (
        "dual_a5000-v13.xml",
        "590.44.01",
        [
            ("GPU-12345678-aaaa-bbbb-cccc-0123456789ab", "NVIDIA RTX A5000", 24564, 22437, 0, None),
            ("GPU-12345678-aaaa-bbbb-cccc-0123456789cd", "NVIDIA RTX A5000", 24564, 17253, 0, None),
        ],
    ),
    (
        "pro-6000-maxq-blackwell-v13.xml",
        "590.44.01",
        [
            (
                "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
                "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                97887,
                65720,
                0,
                None,
            )
        ],
    ),
]


@pytest.mark.parametrize(("file", "driver", "expected"), GPUS)
def test_readings_from_xml_real_log_gives_each_gpu_with_its_figures(
    file: str, driver: str, expected: list[tuple[str, str, int, int, int | None, str | None]]
) -> None:
    readings = readings_from_xml(parse_xml(real_text(TELEGRAF_XML / file)))

    assert readings.source == "nvidia-smi"
    assert readings.driver_version == driver
    assert [g.index for g in readings.gpus] == list(range(len(expected)))
    assert [
        (g.uuid, g.name, g.memory_total_mib, g.memory_used_mib, g.utilization_pct, g.mig_mode)
        for g in readings.gpus
    ] == expected


# file -> per GPU: (pid, used MiB) of each process
PROCESSES = [
    ("a100-sxm4-v12.xml", [[]]),
    ("a10g.xml", [[(725, 22)]]),
    ("tesla-t4.xml", [[(675, 22), (5762, 1005)]]),
    ("rtx-3080-v12.xml", [[(835, 550), (1481, 18), (2214, 79), (4044, 541), (42416, 159)]]),
    ("rtx-4000-sff-ada-v13.xml", [[(1842, 410), (3190, 451), (4937, 160), (34626, 183)]]),
    ("dual_a5000-v13.xml", [[(100477, 22430)], [(100477, 17246)]]),
    ("pro-6000-maxq-blackwell-v13.xml", [[(116860, 65710)]]),
]


@pytest.mark.parametrize(("file", "expected"), PROCESSES)
def test_readings_from_xml_real_log_puts_processes_on_their_gpu(
    file: str, expected: list[list[tuple[int, int]]]
) -> None:
    readings = readings_from_xml(parse_xml(real_text(TELEGRAF_XML / file)))

    assert [[(p.pid, p.used_memory_mib) for p in g.processes] for g in readings.gpus] == expected


def test_parse_xml_real_off_mig_processes_have_no_instance_ids() -> None:
    log = parse_xml(real_text(TELEGRAF_XML / "rtx-4000-sff-ada-v13.xml"))

    (gpu,) = log.gpus
    assert {(p.gpu_instance, p.compute_instance) for p in gpu.processes} == {(None, None)}
    assert gpu.mig_devices == ()


def test_parse_xml_real_a100_mig_devices_have_instance_ids_and_memory() -> None:
    (gpu,) = parse_xml(real_text(TELEGRAF_XML / "a100-sxm4-v12.xml")).gpus

    assert [
        (m.index, m.gpu_instance, m.compute_instance, m.memory_total_mib, m.memory_used_mib)
        for m in gpu.mig_devices
    ] == [(0, 3, 0, 19968, 12), (1, 4, 0, 19968, 12), (2, 5, 0, 19968, 12), (3, 6, 0, 19968, 12)]


def test_readings_from_xml_real_a100_mig_without_listing_leaves_devices_out() -> None:
    readings = readings_from_xml(parse_xml(real_text(TELEGRAF_XML / "a100-sxm4-v12.xml")))

    assert readings.gpus[0].mig_devices == ()
    assert readings.problems == (
        f"4 MIG devices of {A100_UUID} left out: nvidia-smi -L did not name them",
    )


def test_readings_from_xml_real_a100_mig_with_listing_names_devices_by_index() -> None:
    listing = listed_mig_devices(
        f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {A100_UUID})\n"
        + "".join(
            f"  MIG 1g.20gb     Device  {i}: (UUID: MIG-a100000{i}-0000-0000-0000-000000000000)\n"
            for i in (0, 1, 2, 3)
        )
    )

    readings = readings_from_xml(parse_xml(real_text(TELEGRAF_XML / "a100-sxm4-v12.xml")), listing)

    devices = readings.gpus[0].mig_devices
    assert [(m.uuid[:12], m.profile, m.gpu_instance, m.memory_total_mib) for m in devices] == [
        (f"MIG-a100000{i}", "1g.20gb", 3 + i, 19968) for i in range(4)
    ]
    assert readings.problems == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "printed no XML"),
        ("NVIDIA-SMI has failed because it couldn't communicate", "printed no XML"),
        ("<html><body/></html>", "printed <html>"),
    ],
)
def test_parse_xml_not_nvidia_smi_xml_raises_smi_xml_error(text: str, message: str) -> None:
    with pytest.raises(SmiXmlError, match=message):
        parse_xml(text)


def test_parse_xml_not_supported_values_become_none() -> None:
    text = (
        "<nvidia_smi_log><driver_version>N/A</driver_version><gpu><uuid>GPU-a</uuid>"
        "<product_name>NVIDIA GB10</product_name>"
        "<fb_memory_usage><total>[Not Supported]</total><used>[N/A]</used></fb_memory_usage>"
        "<utilization><gpu_util>[Unknown Error]</gpu_util></utilization>"
        "<processes><process_info><pid>N/A</pid></process_info>"
        "<process_info><pid>7</pid><used_memory>[N/A]</used_memory></process_info></processes>"
        "</gpu></nvidia_smi_log>"
    )

    (gpu,) = readings_from_xml(parse_xml(text)).gpus

    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.utilization_pct) == (None, None, None)
    assert [(p.pid, p.used_memory_mib, p.name) for p in gpu.processes] == [(7, None, None)]
