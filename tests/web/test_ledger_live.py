"""The ledger through the real dashboard on the `clusters` scenario (plain objects, over HTTP).

Two plugin installs (the configured DaemonSet and one the way NVIDIA's Helm chart installs
it, config-manager and all), a MIG node under the mixed strategy, a node picking its
config by label, a cordoned node, and a pod waiting for more than any node has free.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.simulator.apiserver.resources import RESOURCES
from tests.conftest import Stack

HELM_NS = "nvidia-device-plugin"
HELM = "nvidia-device-plugin/nvidia-device-plugin"
MAIN = "kube-system/nvidia-device-plugin-daemonset"


def rs(allocatable: int, requested: int, free: int, stranded: int = 0) -> dict[str, int]:
    return {"allocatable": allocatable, "requested": requested, "free": free, "stranded": stranded}


@pytest.fixture
def clusters(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack(
        "clusters", plugin_config_namespaces=["nvidia-device-plugin", "gpu-operator"]
    )

    def reported() -> bool:
        summary = stack.summary()
        return summary["totals"]["physical_gpus"] == 16  # type: ignore[index]

    stack.wait(reported, what="every agent report")
    return stack


def node(stack: Stack, name: str) -> dict[str, Any]:
    response = stack.client.get(f"/api/v1/nodes/{name}")
    response.raise_for_status()
    found: dict[str, Any] = response.json()["node"]
    return found


def test_summary_counts_every_resource_stranded_and_pending(clusters: Stack) -> None:
    summary = clusters.summary()
    assert summary["mode"] == "mixed"
    assert summary["resources"] == {
        "nvidia.com/gpu": rs(28, 6, 23, 1),
        "nvidia.com/mig-1g.10gb": rs(7, 1, 6),
        "nvidia.com/mig-3g.40gb": rs(2, 0, 2),
    }
    totals = summary["totals"]
    assert {k: totals[k] for k in ("physical_gpus", "allocatable", "requested")} == {  # type: ignore[index]
        "physical_gpus": 16,
        "allocatable": 28,
        "requested": 6,
    }
    assert {k: totals[k] for k in ("free", "stranded", "pending")} == {  # type: ignore[index]
        "free": 23,
        "stranded": 1,
        "pending": 16,
    }
    [demand] = summary["pending_demand"]  # type: ignore[misc]
    assert {k: demand[k] for k in ("resource", "pods", "slots", "reason", "largest")} == {
        "resource": "nvidia.com/gpu",
        "pods": 1,
        "slots": 16,
        "reason": "too-large",
        "largest": 15,
    }
    assert summary["findings"] == {"error": 0, "warning": 2, "info": 1}
    codes = [
        (f["code"], f["node"]) for f in clusters.client.get("/api/v1/findings").json()["findings"]
    ]
    assert codes == [
        ("gpu-demand-pending", None),
        ("requested-above-allocatable", "gpu-over-6"),
        ("slots-stranded", "gpu-cordoned-2"),
    ]


def test_the_pending_reason_is_worded_in_each_language(clusters: Stack) -> None:
    why_en = "largest schedulable free is 15 nvidia.com/gpu, below the request of 16"
    why_ko = "한 노드의 스케줄 가능한 최대 빈 슬롯이 nvidia.com/gpu 15개로, 요청 16개보다 적습니다"
    for lang, why in (("en", why_en), ("ko", why_ko)):
        findings = clusters.client.get(f"/api/v1/findings?lang={lang}").json()["findings"]
        [title] = [f["title"] for f in findings if f["code"] == "gpu-demand-pending"]
        assert title.endswith(why)
        assert why in clusters.client.get(f"/?lang={lang}").text


def test_helm_node_picks_its_config_by_label(clusters: Stack) -> None:
    got = node(clusters, "gpu-ts-3")
    assert (got["mode"], got["expected_slots"], got["allocatable"], got["free"]) == (
        "time-slicing",
        16,
        16,
        15,
    )
    assert got["config"] == {
        "daemonset": HELM,
        "managed_by": "helm",
        "source": "configmap/nvidia-device-plugin-configs#ts4",
        "configmap": "nvidia-device-plugin-configs",
        "key": "ts4",
        "label": "ts4",
        "mig_strategy": "mixed",
        "allocation_policy": "distributed",
        "fail_requests_greater_than_one": False,
        "change_with": "helm upgrade <release> -n nvidia-device-plugin --reuse-values -f "
        "values.yaml  # config.map / config.default; per node: kubectl label node gpu-ts-3 "
        "nvidia.com/device-plugin.config=<config key> --overwrite",
    }
    holders = got["gpus"][0]["holders"]
    assert [(h["pod"], h["assignment"], h["slots"]) for h in holders] == [
        ("ml/share-0", "kubelet", 1)
    ]


def test_mig_node_shows_mig_devices_and_their_holders(clusters: Stack) -> None:
    got = node(clusters, "gpu-mig-4")
    assert got["resources"] == {
        "nvidia.com/gpu": rs(1, 0, 1),
        "nvidia.com/mig-1g.10gb": rs(7, 1, 6),
        "nvidia.com/mig-3g.40gb": rs(2, 0, 2),
    }
    assert (got["config"]["key"], got["expected_slots"]) == ("default", 1)
    assert [(g["slots"], len(g["mig_devices"])) for g in got["gpus"]] == [(7, 7), (2, 2), (1, 0)]
    first = got["gpus"][0]["mig_devices"][0]
    assert (first["profile"], first["resource"], first["slots"]) == (
        "1g.10gb",
        "nvidia.com/mig-1g.10gb",
        1,
    )
    assert [(h["pod"], h["assignment"]) for h in first["holders"]] == [
        ("ml/mig-small-0", "kubelet")
    ]
    # Issue 22: the MIG holder is one of the node's pods, with the resource it holds.
    assert [(p["pod"], p["resource"], p["slots"]) for p in got["pods"]] == [
        ("ml/mig-small-0", "nvidia.com/mig-1g.10gb", 1)
    ]
    assert (got["requested"], got["free"]) == (0, 1)
    assert got["findings"] == []


def test_cordoned_node_is_not_schedulable_and_strands_its_free_slot(clusters: Stack) -> None:
    got = node(clusters, "gpu-cordoned-2")
    assert (got["schedulable"], got["unschedulable_reason"]) == (False, "cordoned")
    assert (got["allocatable"], got["requested"], got["free"], got["stranded"]) == (2, 1, 0, 1)
    assert got["resources"] == {"nvidia.com/gpu": rs(2, 1, 0, 1)}
    assert got["config"]["daemonset"] == MAIN
    assert [f["code"] for f in got["findings"]] == ["slots-stranded"]


def test_without_the_helm_namespace_its_nodes_say_why_their_config_is_unknown(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("clusters")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 16,  # type: ignore[index]
        what="every agent report",
    )
    got = node(stack, "gpu-ts-3")
    assert (got["mode"], got["expected_slots"]) == ("unknown", None)
    assert [f["code"] for f in got["findings"]] == ["config-namespace-not-read"]


def test_gpu_operator_node_is_read_with_the_operators_way_to_change_it(clusters: Stack) -> None:
    got = node(clusters, "gpu-op-5")
    assert (got["mode"], got["expected_slots"], got["allocatable"]) == ("time-slicing", 4, 4)
    assert got["config"] == {
        "daemonset": "gpu-operator/nvidia-device-plugin-daemonset",
        "managed_by": "gpu-operator",
        "source": "configmap/time-slicing-config-all#any",
        "configmap": "time-slicing-config-all",
        "key": "any",
        "label": None,
        "mig_strategy": "single",
        "allocation_policy": "distributed",
        "fail_requests_greater_than_one": False,
        "change_with": "kubectl edit clusterpolicy cluster-policy  "
        "# spec.devicePlugin.config (name, default)",
    }
    assert got["findings"] == []


def test_overcommitted_node_shows_free_zero_and_its_own_finding(clusters: Stack) -> None:
    got = node(clusters, "gpu-over-6")
    assert (got["allocatable"], got["requested"], got["free"]) == (1, 3, 0)
    assert got["resources"] == {"nvidia.com/gpu": rs(1, 3, 0)}
    assert [f["code"] for f in got["findings"]] == ["requested-above-allocatable"]


def test_rename_by_default_leaves_old_pods_double_booked(clusters: Stack) -> None:
    sim = clusters.simulator
    configmap = copy.deepcopy(sim.get("ConfigMap", "nvidia-device-plugin-configs", HELM_NS))
    assert configmap is not None
    configmap["data"]["shared4"] = (
        "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
        "    resources:\n      - name: nvidia.com/gpu\n        replicas: 4\n"
    )
    sim.registry.put(RESOURCES[2], configmap)
    labelled = copy.deepcopy(sim.get("Node", "gpu-ts-3"))
    assert labelled is not None
    labelled["metadata"]["labels"]["nvidia.com/device-plugin.config"] = "shared4"
    sim.registry.put(RESOURCES[0], labelled)

    def booked() -> dict[str, Any] | None:
        got = node(clusters, "gpu-ts-3")
        return got if [f["code"] for f in got["findings"]] == ["gpu-double-booked"] else None

    got = clusters.wait(booked, what="the renamed resource")
    assert isinstance(got, dict)
    assert got["resources"] == {
        "nvidia.com/gpu": rs(0, 1, 0),
        "nvidia.com/gpu.shared": rs(16, 0, 16),
    }
    assert got["findings"][0]["evidence"] == {
        "resource": "nvidia.com/gpu",
        "requested": 1,
        "allocatable": 0,
        "advertised_as": "nvidia.com/gpu.shared",
        "pods": "ml/share-0",
    }


def test_pages_show_every_resource_mig_devices_and_the_cordon(clusters: Stack) -> None:
    overview = clusters.client.get("/").text
    assert overview.count('data-testid="resource-row"') == 3
    assert 'data-resource="nvidia.com/mig-3g.40gb"' in overview
    assert 'data-testid="unschedulable-gpu-cordoned-2"' in overview
    assert "Unschedulable: cordoned" in overview
    assert "1 pending pod wants 16 nvidia.com/gpu" in overview
    assert 'data-testid="cluster-mode" data-mode="mixed"' in overview
    detail = clusters.client.get("/nodes/gpu-mig-4").text
    assert detail.count('data-testid="mig-row"') == 9
    assert detail.count('data-testid="pod-row"') == 1
    assert (
        '<tr data-testid="pod-row" id="pod-ml-mig-small-0"><td>ml/mig-small-0</td><td>Running</td>'
        '<td><code>nvidia.com/mig-1g.10gb</code></td><td class="num">1</td><td>0 MIG 1g.10gb</td>'
    ) in detail
    assert 'data-testid="mig-holders-MIG-' in detail
    assert "Plugin nvidia-device-plugin/nvidia-device-plugin, config " in detail


def test_metrics_carry_every_resource_and_pending_demand(clusters: Stack) -> None:
    text = clusters.client.get("/metrics").text
    assert 'gpu_slots_free{node="gpu-mig-4",resource="nvidia.com/mig-1g.10gb"} 6' in text
    assert 'gpu_slots_stranded{node="gpu-cordoned-2",resource="nvidia.com/gpu"} 1' in text
    assert 'gpu_slots_pending_slots{resource="nvidia.com/gpu"} 16' in text


MPS_SCENARIO = """
nodes:
  - name: mps-1
    pod_resources: true
    gpu_count: 2
objects:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: nvidia-device-plugin-config, namespace: kube-system}
    data:
      config.yaml: |
        version: v1
        sharing:
          mps:
            resources:
              - name: nvidia.com/gpu
                replicas: 2
  - apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: nvidia-device-plugin-daemonset, namespace: kube-system}
    spec:
      selector:
        matchLabels: {name: nvidia-device-plugin-ds}
      template:
        metadata:
          labels: {name: nvidia-device-plugin-ds}
        spec:
          containers:
            - name: nvidia-device-plugin-ctr
              image: nvcr.io/nvidia/k8s-device-plugin:v0.18.2
              env:
                - {name: FAIL_ON_INIT_ERROR, value: "false"}
                - {name: MPS_ROOT, value: /run/nvidia/mps}
                - {name: CONFIG_FILE, value: /config/config.yaml}
              volumeMounts:
                - {name: plugin-config, mountPath: /config}
          volumes:
            - name: plugin-config
              configMap: {name: nvidia-device-plugin-config}
"""


def test_mps_without_its_control_daemon_names_the_daemon(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    scenario = tmp_path / "mps.yaml"
    scenario.write_text(MPS_SCENARIO)
    stack = make_stack(str(scenario))
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 2,  # type: ignore[index]
        what="the agent report",
    )
    got = node(stack, "mps-1")
    assert (got["mode"], got["allocatable"], got["expected_slots"]) == ("mps", None, 4)
    assert [f["code"] for f in got["findings"]] == ["mps-daemon-missing"]


STRANDED_SCENARIO = """
nodes:
  - name: gpu-a
    gpu_count: 2
  - name: gpu-lost
    ready: false
    gpu_count: 2
  - name: gpu-train
    taints: [{key: dedicated, value: train, effect: NoSchedule}]
    gpu_count: 2
  - name: gpu-tolerated
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
    gpu_count: 2
objects:
  - apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: nvidia-device-plugin-daemonset, namespace: kube-system}
    spec:
      selector:
        matchLabels: {name: nvidia-device-plugin-ds}
      template:
        metadata:
          labels: {name: nvidia-device-plugin-ds}
        spec:
          containers:
            - name: nvidia-device-plugin-ctr
              image: nvcr.io/nvidia/k8s-device-plugin:v0.18.2
"""


def test_not_ready_and_tainted_nodes_strand_their_slots(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    scenario = tmp_path / "stranded.yaml"
    scenario.write_text(STRANDED_SCENARIO)
    stack = make_stack(str(scenario))
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 8,  # type: ignore[index]
        what="the agent reports",
    )
    rows = [
        (n["name"], n["schedulable"], n["unschedulable_reason"], n["free"], n["stranded"])
        for n in stack.client.get("/api/v1/nodes").json()["nodes"]
    ]
    assert rows == [
        ("gpu-a", True, None, 2, 0),
        ("gpu-lost", False, "NotReady", 0, 2),
        ("gpu-tolerated", True, None, 2, 0),
        ("gpu-train", False, "tainted dedicated=train:NoSchedule", 0, 2),
    ]
    totals = stack.summary()["totals"]
    assert (totals["free"], totals["stranded"]) == (4, 4)  # type: ignore[index]
    findings = stack.client.get("/api/v1/findings").json()["findings"]
    assert sorted((f["code"], f["node"]) for f in findings) == [
        ("slots-stranded", "gpu-lost"),
        ("slots-stranded", "gpu-train"),
    ]
