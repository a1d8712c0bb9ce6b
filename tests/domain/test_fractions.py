"""GPU fractions (KAI scheduler / Run:ai): holders of a share of one GPU, not bypassers."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.accounting.fractions import GpuFraction, quantity_mib, read_fraction
from app.domain.snapshot import PodSlots, SlotHolder
from tests import factories as f
from tests.domain.worlds import snap, world

GPU0 = f.gpu_uuid("gpu-1", 0)
RESERVATION = "kai-resource-reservation/gpu-reservation-gpu-1-g1"


def codes(result: Any) -> list[str]:
    return sorted(x.code for x in result.findings)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"gpu-fraction": "0.5"}, GpuFraction("gpu-fraction", portion=0.5)),
        ({"gpu-memory": "2000"}, GpuFraction("gpu-memory", memory_mib=2000)),
        (
            {"gpu-fraction": "0.25", "gpu-fraction-num-devices": "2"},
            GpuFraction("gpu-fraction", portion=0.25, devices=2),
        ),
        (
            {
                "nvidia.com/container.main.gpu-memory.request": "1Gi",
                "nvidia.com/container.main.gpu-memory.limit": "2Gi",
            },
            GpuFraction(
                "nvidia.com/container.main.gpu-memory.request", memory_mib=1024, limit_mib=2048
            ),
        ),
        (
            {"nvidia.com/container.main.gpu-memory.limit": "4096Mi"},
            GpuFraction(
                "nvidia.com/container.main.gpu-memory.limit", memory_mib=4096, limit_mib=4096
            ),
        ),
        ({"gpu-fraction": "1.5"}, None),
        ({"gpu-fraction": "half"}, None),
        ({"gpu-memory": "-1"}, None),
        ({"gpu-fraction-num-devices": "2"}, None),
        ({}, None),
    ],
)
def test_read_fraction_annotations_give_share_or_none(
    annotations: dict[str, str], expected: GpuFraction | None
) -> None:
    assert read_fraction(annotations) == expected


def test_quantity_mib_units_give_whole_mib() -> None:
    values = ["2Gi", "2048Mi", "2G", "1073741824", "0.5Gi", "1Ki", "lots", ""]
    assert [quantity_mib(v) for v in values] == [2048, 2048, 1907, 1024, 512, None, None, None]


def test_quantity_mib_reads_quantities_as_the_api_server_does() -> None:
    # An exponent is a quantity; `K` is no suffix (only `k` and `Ki` are); negatives hold none.
    values = ["1e9", "2K", "-1Gi", "3m"]
    assert [quantity_mib(v) for v in values] == [953, None, None, None]


def test_gpu_fraction_share_and_limit_follow_the_gpu_memory() -> None:
    memory = GpuFraction("gpu-memory", memory_mib=20480)
    portion = GpuFraction("gpu-fraction", portion=0.5)
    assert (memory.share(81920), memory.limit(81920), memory.share(None)) == (0.25, 20480, None)
    assert (portion.share(None), portion.limit(81920), portion.limit(None)) == (0.5, 40960, None)


def _kai_world(*pods: f.Manifest, processes: dict[int, list[Any]] | None = None) -> Any:
    readings = [f.gpu(i, processes=(processes or {}).get(i, [])) for i in range(4)]
    return world(pods=list(pods), readings=readings)


def test_fraction_pods_with_reservation_hold_shares_of_the_named_gpu() -> None:
    state = _kai_world(
        f.reservation_pod("g1", GPU0),
        f.fraction_pod("a", annotations={"gpu-fraction": "0.5"}, group="g1"),
        f.fraction_pod("b", annotations={"gpu-memory": "20480"}, group="g1"),
        processes={
            0: [f.proc(11, mib=30000, pod_uid="uid-a"), f.proc(12, mib=9000, pod_uid="uid-b")]
        },
    )
    result = snap(state)
    node = result.nodes[0]
    assert node.gpus[0].holders == [
        SlotHolder(pod=RESERVATION, slots=1, assigned=False, gpu_group="g1"),
        SlotHolder(
            pod="ml/a",
            slots=0,
            assigned=False,
            assignment="reservation",
            resource="gpu-fraction",
            source="fraction",
            share=0.5,
            memory_limit_mib=40960,
            gpu_group="g1",
        ),
        SlotHolder(
            pod="ml/b",
            slots=0,
            assigned=False,
            assignment="reservation",
            resource="gpu-memory",
            source="fraction",
            share=0.25,
            memory_limit_mib=20480,
            gpu_group="g1",
        ),
    ]
    assert node.gpus[0].held_slots == 1
    assert [g.holders for g in node.gpus[1:]] == [[], [], []]
    assert node.pods == [
        PodSlots(
            pod=RESERVATION,
            uid=f"uid-{RESERVATION.split('/')[1]}",
            phase="Running",
            slots=1,
            resource="nvidia.com/gpu",
        ),
        PodSlots(
            pod="ml/a", uid="uid-a", phase="Running", slots=0, resource="gpu-fraction", share=0.5
        ),
        PodSlots(
            pod="ml/b", uid="uid-b", phase="Running", slots=0, resource="gpu-memory", share=0.25
        ),
    ]
    assert (node.requested, node.free, node.allocatable) == (1, 3, 4)
    assert codes(result) == []  # neither bypassers nor a host's memory


def test_fraction_pod_without_annotation_stays_a_bypasser() -> None:
    plain = f.pod("a", containers=[{"name": "main", "image": "vllm"}])
    result = snap(_kai_world(plain, processes={1: [f.proc(11, mib=3000, pod_uid="uid-a")]}))
    assert codes(result) == ["pod-process-without-slot"]
    assert result.nodes[0].gpus[1].holders == []


def test_fraction_pod_without_reservation_placed_by_its_processes_and_unreserved() -> None:
    state = _kai_world(
        f.fraction_pod("a", annotations={"gpu-fraction": "0.3"}),
        processes={2: [f.proc(11, mib=3000, pod_uid="uid-a")]},
    )
    result = snap(state)
    [holder] = result.nodes[0].gpus[2].holders
    assert (holder.pod, holder.assignment, holder.share, holder.memory_limit_mib) == (
        "ml/a",
        "process",
        0.3,
        24576,
    )
    assert codes(result) == ["gpu-fraction-unreserved"]
    [item] = result.findings
    assert (item.gpu_uuid, item.evidence) == (
        f.gpu_uuid("gpu-1", 2),
        {"pods": "ml/a", "fraction_pods": 1, "free_slots": 1, "gpu_index": 2},
    )


def test_fractions_summing_over_one_gpu_are_an_error() -> None:
    pods = [
        f.fraction_pod(n, annotations={"gpu-fraction": "0.5"}, group="g1") for n in ("a", "b", "c")
    ]
    result = snap(_kai_world(f.reservation_pod("g1", GPU0), *pods))
    assert codes(result) == ["gpu-fractions-over-one"]
    [item] = result.findings
    assert item.evidence == {
        "share_total": 1.5,
        "fraction_pods": 3,
        "pods": "ml/a, ml/b, ml/c",
        "gpu_index": 0,
        "memory_total_mib": 81920,
    }
    assert item.severity.value == "error"


def test_fraction_pod_using_more_than_its_memory_limit_is_flagged() -> None:
    state = _kai_world(
        f.reservation_pod("g1", GPU0),
        f.fraction_pod("a", annotations={"gpu-fraction": "0.25"}, group="g1"),
        processes={0: [f.proc(11, mib=30000, pod_uid="uid-a")]},
    )
    result = snap(state)
    assert codes(result) == ["gpu-fraction-memory-over-limit"]
    [item] = result.findings
    assert (item.pod, item.evidence) == (
        "ml/a",
        {
            "used_memory_mib": 30000,
            "memory_limit_mib": 20480,
            "share": 0.25,
            "annotation": "gpu-fraction",
            "gpu_index": 0,
        },
    )


def test_fraction_pod_requesting_a_gpu_is_a_plain_slot_holder() -> None:
    whole = f.pod("a")
    whole["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
    node = snap(_kai_world(whole)).nodes[0]
    assert [(p.pod, p.resource, p.slots, p.share) for p in node.pods] == [
        ("ml/a", "nvidia.com/gpu", 1, None)
    ]
    assert [h.source for g in node.gpus for h in g.holders] == ["device-plugin"]
