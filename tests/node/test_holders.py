"""Who holds which GPU, from the real kubelet's PodResources, and what NVML says runs there.

The agent runs on the host with the mock library (its machine file holds the GPUs' processes)
and reads the real kubelet's PodResources socket. The processes are real: a host process
started by the test, and the pod's own container process (its PID from containerd), so the
agent's cgroup attribution meets the kubelet's real pod cgroups.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.podresources import PodResourcesClient
from tests.node.world import NodeWorld, gpu_pod, seed_objects, wait_until

GPU0 = "GPU-3f1c5a2e-8b4d-4e6f-9a7b-0c1d2e3f4a50"  # kept for the host
ADVERTISED = {
    "GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72",
    "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83",
}


@pytest.fixture
def two_pods(clean_node: NodeWorld) -> Iterator[NodeWorld]:
    """The seed's basic plugin and notebook, plus a second one-GPU pod: both GPUs taken."""
    world = clean_node
    world.apply(seed_objects("host-split"))
    world.apply([gpu_pod("train-1")])
    for name in ("notebook-0", "train-1"):
        world.wait_running("ml", name)
    original = world.machine_path.read_text()
    yield world
    world.machine_path.write_text(original)


def _kubelet_devices(world: NodeWorld) -> dict[str, list[str]]:
    client = PodResourcesClient(world.node.pod_resources_socket)
    try:
        assignments = client.list_assignments()
    finally:
        client.close()
    return {
        f"{a.namespace}/{a.pod}": sorted(a.device_ids)
        for a in assignments
        if a.resource == "nvidia.com/gpu"
    }


def _both_listed(world: NodeWorld) -> dict[str, list[str]] | None:
    devices = _kubelet_devices(world)
    return devices if len(devices) == 2 else None


def _holders_if(
    world: NodeWorld, expected: dict[str, list[tuple[str, str]]]
) -> dict[str, list[tuple[str, str]]] | None:
    holders = _holders(world)
    return holders if all(holders.get(u) == v for u, v in expected.items()) else None


def _holders(world: NodeWorld) -> dict[str, list[tuple[str, str]]]:
    """GPU UUID -> (pod, assignment source) on the dashboard."""
    return {
        g["uuid"]: sorted((h["pod"], h["assignment"]) for h in g.get("holders") or [])
        for g in world.node_view().get("gpus") or []
    }


def test_pod_resources_from_the_real_kubelet_attribute_pods_to_gpus(two_pods: NodeWorld) -> None:
    world = two_pods
    kubelet = wait_until(
        lambda: _both_listed(world), what="the real kubelet's PodResources listing both pods"
    )
    assert {ids[0] for ids in kubelet.values()} == ADVERTISED  # one GPU each, never GPU 0/1
    expected = {ids[0]: [(pod, "kubelet")] for pod, ids in kubelet.items()}

    holders = wait_until(
        lambda: _holders_if(world, expected),
        what=f"the dashboard's holders to match the kubelet's {kubelet}",
        timeout_s=60,
    )

    assert holders[GPU0] == []
    view = world.node_view()
    assert (view["requested"], view["free"]) == (2, 0)


def test_the_agent_reports_through_the_mock_library(two_pods: NodeWorld) -> None:
    world = two_pods
    kubelet = wait_until(
        lambda: _both_listed(world), what="the real kubelet's PodResources listing both pods"
    )
    notebook_gpu = kubelet["ml/notebook-0"][0]
    host = subprocess.Popen(["sleep", "600"])
    try:
        machine: dict[str, Any] = copy.deepcopy(_machine(world))
        for gpu in machine["gpus"]:
            if gpu["uuid"] == GPU0:
                gpu["processes"] = [{"pid": host.pid, "usedMemoryMiB": 30000}]
                gpu["utilizationPct"] = 97
            if gpu["uuid"] == notebook_gpu:
                pid = world.container_pid("ml", "notebook-0")
                gpu["processes"] = [{"pid": pid, "usedMemoryMiB": 9216}]
        world.set_machine(machine)

        gpus = wait_until(
            lambda: _with_processes(world, {GPU0, notebook_gpu}),
            what="the agent's next report with both processes",
            timeout_s=60,
        )
    finally:
        host.terminate()
        host.wait(timeout=10)

    assert [(p["owner"], p["used_memory_mib"]) for p in gpus[GPU0]["processes"]] == [
        ("host", 30000)
    ]
    assert (gpus[GPU0]["memory_used_mib"], gpus[GPU0]["memory_total_mib"]) == (30000, 81920)
    notebook = gpus[notebook_gpu]["processes"]
    assert [(p["owner"], p["pod"], p["used_memory_mib"]) for p in notebook] == [
        ("pod", "ml/notebook-0", 9216)
    ]
    assert {g["name"] for g in gpus.values()} == {"NVIDIA A100-SXM4-80GB"}
    codes = {f["code"] for f in world.findings()}
    assert "host-process-on-advertised-gpu" not in codes  # the host's GPU 0 is not advertised


def _machine(world: NodeWorld) -> dict[str, Any]:
    import json

    loaded: dict[str, Any] = json.loads(Path(world.machine_path).read_text())
    return loaded


def _with_processes(world: NodeWorld, uuids: set[str]) -> dict[str, dict[str, Any]] | None:
    gpus = {g["uuid"]: g for g in world.node_view().get("gpus") or []}
    if all(gpus.get(u, {}).get("processes") for u in uuids):
        return gpus
    return None
