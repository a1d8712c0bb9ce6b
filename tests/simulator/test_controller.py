"""The simulated DaemonSet controller and kubelet: restarts, node resources, pod states."""

from __future__ import annotations

from typing import Any

import pytest

from app.simulator.apiserver.resources import CONFIGMAP, DAEMONSET, NODE, POD
from app.simulator.world.cluster import SimulatedCluster

DS = "nvidia-device-plugin-daemonset"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def restart(sim: SimulatedCluster, stamp: str) -> None:
    """What `kubectl rollout restart` sends."""
    patch = {
        "spec": {
            "template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}}
        }
    }
    sim.registry.patch(DAEMONSET, "kube-system", DS, STRATEGIC, patch)


def set_config(sim: SimulatedCluster, text: str) -> None:
    sim.registry.patch(
        CONFIGMAP,
        "kube-system",
        "nvidia-device-plugin-config",
        MERGE,
        {"data": {"config.yaml": text}},
    )


def gpu(sim: SimulatedCluster, node: str, resource: str = "nvidia.com/gpu") -> tuple[str, str]:
    obj = sim.get("Node", node)
    assert obj is not None
    status = obj["status"]
    return status["capacity"].get(resource, "-"), status["allocatable"].get(resource, "-")


def plugin_pods(sim: SimulatedCluster) -> list[dict[str, Any]]:
    return [
        p for p in sim.store.objects(POD, "kube-system") if p["metadata"]["name"].startswith(DS)
    ]


TS = (
    "version: v1\nsharing:\n  timeSlicing:\n{extra}"
    "    resources:\n    - name: nvidia.com/gpu\n      replicas: {r}\n"
)


@pytest.fixture
def ts() -> SimulatedCluster:
    return SimulatedCluster("time-slicing")


def test_configmap_change_alone_changes_nothing_until_template_changes(
    ts: SimulatedCluster,
) -> None:
    names = {p["metadata"]["name"] for p in plugin_pods(ts)}
    set_config(ts, TS.format(extra="", r=2))
    assert gpu(ts, "gpu-node-a") == ("32", "32")
    assert {p["metadata"]["name"] for p in plugin_pods(ts)} == names
    restart(ts, "2025-01-01T00:00:00Z")
    assert gpu(ts, "gpu-node-a") == ("8", "8")
    assert not names & {p["metadata"]["name"] for p in plugin_pods(ts)}


def test_restarted_pods_are_new_objects_owned_by_the_daemonset(ts: SimulatedCluster) -> None:
    old = {p["metadata"]["uid"] for p in plugin_pods(ts)}
    restart(ts, "2025-01-01T00:00:00Z")
    pods = plugin_pods(ts)
    ds = ts.get("DaemonSet", DS, "kube-system")
    assert ds is not None and len(pods) == 3
    assert not old & {p["metadata"]["uid"] for p in pods}
    for pod in pods:
        assert pod["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
        assert pod["metadata"]["labels"]["name"] == "nvidia-device-plugin-ds"
        assert pod["status"]["phase"] == "Running"
        assert pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        assert pod["spec"]["nodeName"] in ts.inventories
    assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] == 3
    assert ds["status"]["observedGeneration"] == ds["metadata"]["generation"]


def test_rename_by_default_moves_slots_and_zeroes_the_old_name(ts: SimulatedCluster) -> None:
    set_config(ts, TS.format(extra="    renameByDefault: true\n", r=8))
    restart(ts, "2025-01-01T00:00:00Z")
    assert gpu(ts, "gpu-node-a", "nvidia.com/gpu.shared") == ("32", "32")
    assert gpu(ts, "gpu-node-a") == ("0", "0")
    node = ts.get("Node", "gpu-node-a")
    assert node is not None
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"


def test_gfd_labels_follow_the_plugin(ts: SimulatedCluster) -> None:
    node = ts.get("Node", "gpu-node-a")
    assert node is not None
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.replicas"] == "8"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.count"] == "4"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-SHARED"


def test_invalid_config_crash_loops_the_first_node_and_holds_the_rest(ts: SimulatedCluster) -> None:
    """As the DaemonSet controller does: the first new pod never gets ready and spends
    maxUnavailable 1, so the other nodes keep their old, working plugin pods."""
    before = {p["spec"]["nodeName"]: gpu(ts, p["spec"]["nodeName"]) for p in plugin_pods(ts)}
    set_config(ts, TS.format(extra="", r=1))
    restart(ts, "2025-01-01T00:00:00Z")
    crashing = [p for p in plugin_pods(ts) if not p["status"]["containerStatuses"][0]["ready"]]
    assert len(crashing) == 1
    pod = crashing[0]
    node = pod["spec"]["nodeName"]
    assert gpu(ts, node) == ("0", "0")
    status = pod["status"]["containerStatuses"][0]
    assert pod["status"]["phase"] == "Running" and status["ready"] is False
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["restartCount"] > 0
    assert "replicas must be >= 2" in status["lastState"]["terminated"]["message"]
    assert {n: gpu(ts, n) for n in before if n != node} == {
        n: v for n, v in before.items() if n != node
    }
    ds = ts.get("DaemonSet", DS, "kube-system")
    assert ds is not None and ds["status"]["numberReady"] == len(before) - 1


def test_deleting_a_plugin_pod_recreates_it_with_the_current_config(ts: SimulatedCluster) -> None:
    set_config(ts, TS.format(extra="", r=2))
    pod = next(p for p in plugin_pods(ts) if p["spec"]["nodeName"] == "gpu-node-c")
    ts.registry.delete(POD, "kube-system", pod["metadata"]["name"])
    assert gpu(ts, "gpu-node-c") == ("4", "4")
    assert gpu(ts, "gpu-node-a") == ("32", "32")
    assert len(plugin_pods(ts)) == 3


def test_deleting_the_daemonset_removes_pods_and_zeroes_nodes(ts: SimulatedCluster) -> None:
    ts.registry.delete(DAEMONSET, "kube-system", DS)
    assert plugin_pods(ts) == []
    assert gpu(ts, "gpu-node-a") == ("0", "0")


def test_node_leaving_the_node_selector_loses_its_plugin(ts: SimulatedCluster) -> None:
    patch = {"metadata": {"labels": {"nvidia.com/gpu.deploy.device-plugin": "false"}}}
    ts.registry.patch(NODE, None, "gpu-node-c", MERGE, patch)
    assert gpu(ts, "gpu-node-c") == ("0", "0")
    assert all(p["spec"]["nodeName"] != "gpu-node-c" for p in plugin_pods(ts))
    ds = ts.get("DaemonSet", DS, "kube-system")
    assert ds is not None and ds["status"]["desiredNumberScheduled"] == 2


def test_node_created_through_the_api_is_kept_as_given(ts: SimulatedCluster) -> None:
    node = {
        "metadata": {"name": "outside", "labels": {"nvidia.com/gpu.deploy.device-plugin": "true"}},
        "status": {"capacity": {"nvidia.com/gpu": "7"}, "allocatable": {"nvidia.com/gpu": "5"}},
    }
    created = ts.registry.create(NODE, None, node)
    restart(ts, "2025-01-01T00:00:00Z")
    after = ts.get("Node", "outside")
    assert after is not None and after["status"] == created["status"]
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_kubelet_runs_a_new_pod_bound_to_a_node(ts: SimulatedCluster) -> None:
    pod = {
        "metadata": {"name": "job", "namespace": "research"},
        "spec": {"nodeName": "gpu-node-a", "containers": [{"name": "c", "image": "busybox"}]},
    }
    ts.create_pod(pod)
    created = ts.get("Pod", "job", "research")
    assert created is not None and created["status"]["phase"] == "Running"
    assert created["status"]["containerStatuses"][0]["ready"] is True


def test_kubelet_rejects_two_slots_when_fail_requests_greater_than_one(
    ts: SimulatedCluster,
) -> None:
    set_config(ts, TS.format(extra="    failRequestsGreaterThanOne: true\n", r=8))
    restart(ts, "2025-01-01T00:00:00Z")
    pod = {
        "metadata": {"name": "greedy", "namespace": "research"},
        "spec": {
            "nodeName": "gpu-node-a",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
            ],
        },
    }
    ts.create_pod(pod)
    created = ts.get("Pod", "greedy", "research")
    assert created is not None
    assert (created["status"]["phase"], created["status"]["reason"]) == (
        "Failed",
        "UnexpectedAdmissionError",
    )


def test_deleting_a_pod_stops_its_gpu_processes(ts: SimulatedCluster) -> None:
    assert any(p.pod_name == "nb-alice-0" for p in ts.processes("gpu-node-a"))
    ts.delete_pod("research", "nb-alice-0")
    assert not any(p.pod_name == "nb-alice-0" for p in ts.processes("gpu-node-a"))
