"""The actor's kubelet and driver duties as pure functions (the real tier drives them live)."""

from __future__ import annotations

from typing import Any

from app.simulator.actor import driver, kubelet
from app.simulator.dra.kubelet import assignments
from app.simulator.dra.slices import slice_devices
from app.simulator.node.inventory import NodeInventory, SimGpu
from app.simulator.plugin.daemonsets import node_resources
from app.simulator.plugin.outcome import PluginOutcome

GPUS = (SimGpu(0, "GPU-aaaa"), SimGpu(1, "GPU-bbbb"))
INVENTORY = NodeInventory("n1", GPUS, dra=True)


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", **extra},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "cuda"}]},
    }


def test_node_resources_zero_a_resource_the_plugin_stopped_serving() -> None:
    node = {"status": {"capacity": {"nvidia.com/gpu": "2"}, "allocatable": {"nvidia.com/gpu": "2"}}}
    renamed = PluginOutcome(
        "running",
        "",
        capacity={"nvidia.com/gpu.shared": 8},
        allocatable={"nvidia.com/gpu.shared": 8},
    )

    patch = node_resources(node, renamed, set())

    assert patch["status"]["capacity"] == {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "8"}
    assert patch["status"]["allocatable"] == {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "8"}


def test_plugin_pods_are_daemonset_pods_running_the_plugin_image() -> None:
    plugin = _pod("p", ownerReferences=[{"kind": "DaemonSet", "name": "nvdp"}])
    plugin["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    bare = _pod("q")
    bare["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"

    assert kubelet.is_plugin_pod(plugin) is True
    assert kubelet.is_plugin_pod(bare) is False  # not a DaemonSet's: a user's pod
    assert (
        kubelet.is_plugin_pod(_pod("r", ownerReferences=[{"kind": "DaemonSet", "name": "agent"}]))
        is False
    )


def test_a_pod_needs_starting_once_and_never_while_deleted() -> None:
    assert kubelet.needs_start(_pod("a")) is True
    assert (
        kubelet.needs_start(
            {**_pod("b"), "status": {"phase": "Running", "containerStatuses": [{}]}}
        )
        is False
    )
    assert kubelet.needs_start(_pod("c", deletionTimestamp="2026-01-01T00:00:00Z")) is False


def test_started_status_leaves_the_qos_class_to_the_api_server() -> None:
    status = kubelet.started_status(_pod("a"), None, now="2026-01-01T00:00:00Z", ip="10.0.0.10")

    assert status["phase"] == "Running" and "qosClass" not in status


def _claim(device: str, reserved: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "c1", "namespace": "ml"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.nvidia.com",
                            "pool": "n1",
                            "device": device,
                        }
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": n} for n in reserved],
        },
    }


def test_dra_assignments_list_running_pods_of_reserved_claims() -> None:
    running = {**_pod("a"), "status": {"phase": "Running"}}
    pending = {**_pod("b"), "status": {"phase": "Pending"}}

    found = assignments([running, pending], [_claim("gpu-1", ["a", "b"])])

    assert [(a.pod, a.claim, a.device) for a in found] == [("a", "c1", "gpu-1")]


def test_dra_pod_process_lands_on_the_gpu_its_claim_got() -> None:
    assert [d["name"] for d in slice_devices(INVENTORY)] == ["gpu-0", "gpu-1"]
    pod = _pod("a", annotations={"sim.gpu-slots.io/used-memory-mib": "2048"})

    processes = driver.pod_processes(pod, INVENTORY, [_claim("gpu-1", ["a"])])

    assert [(p.gpu_index, p.used_memory_mib, p.pod_name) for p in processes] == [(1, 2048, "a")]
    assert driver.pod_processes(_pod("a"), INVENTORY, [_claim("gpu-1", ["a"])]) == []
