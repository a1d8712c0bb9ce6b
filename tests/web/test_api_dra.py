"""DRA end to end: the simulator's DRA driver and scheduler -> cache -> engine -> JSON API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Stack

A100 = "dra-a100-1"
MIG = "dra-mig-2"


@pytest.fixture
def dra(make_stack: Any) -> Stack:
    stack: Stack = make_stack("dra")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 10,  # type: ignore[index]
        what="agent reports of the three nodes",
    )
    return stack


def _nodes(stack: Stack) -> dict[str, dict[str, Any]]:
    body = stack.client.get("/api/v1/nodes").json()
    return {n["name"]: n for n in body["nodes"]}


def test_summary_shows_dra_devices_beside_plugin_slots(dra: Stack) -> None:
    summary = dra.summary()
    assert summary["dra"] == {
        "drivers": ["gpu.nvidia.com"],
        "devices": 7,
        "allocated": 5,
        "shared": 2,
        "free": 2,
        "stranded": 0,
        "pending_claims": 1,
        "extended_resources": ["nvidia.com/gpu"],
        "shares": 0,
        "shares_allocated": 0,
        "install": None,
    }
    # Plugin slots are gpu-plugin-1's four alone: DRA devices are not added in.
    assert summary["totals"] == {
        "physical_gpus": 10,
        "visible_gpus": 4,
        "host_gpus": 0,
        "failing_gpus": 0,
        "allocatable": 4,
        "requested": 1,
        "free": 3,
        "stranded": 0,
        "pending": 0,
    }
    assert summary["resources"] == {
        "nvidia.com/gpu": {"allocatable": 4, "requested": 1, "free": 3, "stranded": 0}
    }
    assert summary["findings"]["error"] == 0


def test_nodes_say_how_their_gpus_are_handed_out_and_who_holds_them(dra: Stack) -> None:
    nodes = _nodes(dra)
    assert {name: n["allocation"] for name, n in nodes.items()} == {
        "gpu-plugin-1": "device-plugin",
        A100: "dra",
        MIG: "dra",
    }
    held = {
        g["index"]: sorted((h["pod"], h["source"], h["sharing"]["strategy"]) for h in g["holders"])
        for g in nodes[A100]["gpus"]
    }
    assert held == {
        0: [("ml/train-0", "dra", "Exclusive")],
        1: [("ml/notebook-a", "dra", "TimeSlicing"), ("ml/notebook-b", "dra", "TimeSlicing")],
        2: [("ml/infer-mps-0", "dra", "MPS")],
        3: [("ml/embed-0", "dra", "Exclusive")],
    }
    # Claims hold devices, not plugin slots.
    assert [(g["role"], g["slots"], g["held_slots"]) for g in nodes[A100]["gpus"]] == [
        ("dra", 0, 0)
    ] * 4
    assert nodes[A100]["config"] is None
    claims = {g["index"]: {h["claim"] for h in g["holders"]} for g in nodes[A100]["gpus"]}
    assert claims[1] == {"ml/shared-ts"} and claims[2] == {"ml/shared-mps"}
    assert claims[3] == {next(iter(claims[3]))} and next(iter(claims[3])).startswith(
        "ml/embed-0-extended-resources-"
    )
    # dra-a100-1's agent reads the kubelet's dynamic_resources: holders it confirms say so.
    confirmed = {
        (h["pod"], h["assignment"], h["container"])
        for g in nodes[A100]["gpus"]
        for h in g["holders"]
    }
    assert confirmed == {
        ("ml/train-0", "kubelet", "trainer"),
        ("ml/notebook-a", "kubelet", "notebook"),
        ("ml/notebook-b", "kubelet", "notebook"),
        ("ml/infer-mps-0", "kubelet", "server"),
        ("ml/embed-0", "kubelet", "embed"),
    }
    assert [h["assignment"] for h in nodes[MIG]["gpus"][1]["holders"]] == ["claim"]
    mps = nodes[A100]["gpus"][2]["holders"][0]["sharing"]
    assert (mps["active_thread_pct"], mps["pinned_memory_limit"]) == (50, "20Gi")
    mig_gpu = nodes[MIG]["gpus"][1]
    assert mig_gpu["mig_mode"] == "enabled"
    assert [(d["name"], d["profile"], d["claims"]) for d in mig_gpu["dra_devices"]] == [
        ("gpu-1-mig-9-0-4", "3g.40gb", ["ml/mig-slice"]),
        ("gpu-1-mig-9-4-4", "3g.40gb", []),
    ]
    assert [(h["pod"], h["device"]) for h in mig_gpu["holders"]] == [
        ("ml/mig-job-0", "gpu-1-mig-9-0-4")
    ]
    plugin_gpu = nodes["gpu-plugin-1"]["gpus"][0]
    assert [(h["pod"], h["source"], h["claim"]) for h in plugin_gpu["holders"]] == [
        ("ml/infer-0", "device-plugin", None)
    ]


def test_metrics_expose_dra_devices_by_state(dra: Stack) -> None:
    lines = dra.client.get("/metrics").text.splitlines()
    assert [line for line in lines if line.startswith("gpu_slots_dra")] == [
        "gpu_slots_dra_devices 7",
        "gpu_slots_dra_allocated_devices 5",
        "gpu_slots_dra_shared_devices 2",
        "gpu_slots_dra_free_devices 2",
        "gpu_slots_dra_stranded_devices 0",
        "gpu_slots_dra_pending_claims 1",
    ]


def test_dra_findings_of_the_scenario(dra: Stack) -> None:
    findings = dra.client.get("/api/v1/findings").json()["findings"]
    assert sorted((f["code"], f["severity"]) for f in findings) == [
        ("dra-claim-unsatisfiable", "warning"),
        ("dra-extended-resource-mapped", "info"),
    ]
    unsatisfiable = next(f for f in findings if f["code"] == "dra-claim-unsatisfiable")
    assert unsatisfiable["evidence"]["reason"] == "too-large"
    assert unsatisfiable["title"].endswith(
        ": asks for 8 devices of class gpu.nvidia.com; the largest node has 4"
    )


def test_deleting_pods_releases_their_claims(dra: Stack) -> None:
    sim = dra.simulator
    sim.delete_pod("ml", "train-0")  # its claim came from a template: deleted with the pod
    sim.delete_pod("ml", "notebook-a")  # the shared claim stays, reserved for notebook-b
    # Two deletions, seen by the dashboard one after the other: wait for both (the shared
    # claim stays allocated, so the count alone says nothing of notebook-a's).
    dra.wait(
        lambda: (
            dra.summary()["dra"]["allocated"] == 4  # type: ignore[index]
            and [h["pod"] for h in _nodes(dra)[A100]["gpus"][1]["holders"]] == ["ml/notebook-b"]
        ),
        what="train-0's device released and notebook-a gone from the shared claim",
    )
    gpus = _nodes(dra)[A100]["gpus"]
    assert gpus[0]["holders"] == []
    assert [h["pod"] for h in gpus[1]["holders"]] == ["ml/notebook-b"]
    assert dra.summary()["dra"]["free"] == 3  # type: ignore[index]


def test_demo_has_a_dra_node_beside_the_plugin_nodes(make_stack: Any) -> None:
    demo: Stack = make_stack("demo")
    demo.wait(
        lambda: demo.summary()["dra"]["allocated"] == 3,  # type: ignore[index]
        what="the demo's DRA claims",
    )
    assert demo.summary()["dra"] == {
        "drivers": ["gpu.nvidia.com"],
        "devices": 5,
        "allocated": 3,
        "shared": 1,
        "free": 2,
        "stranded": 0,
        "pending_claims": 0,
        "extended_resources": ["nvidia.com/gpu"],
        "shares": 0,
        "shares_allocated": 0,
        "install": None,
    }
    nodes = _nodes(demo)
    assert nodes["gpu-dra-9"]["allocation"] == "dra"
    assert {n["allocation"] for name, n in nodes.items() if name != "gpu-dra-9"} == {
        "device-plugin"
    }
    # The overview page draws it as a DRA node (polled: a page render may trail the API).
    marker = 'data-testid="allocation-gpu-dra-9" data-allocation="dra"'
    demo.wait(lambda: marker in demo.client.get("/").text, what="the DRA node on the page")
