"""Node label maps and node states reported in public issue threads, through the ledger.

Inputs: ../shared/fixtures/real/nodes/. No public file holds a whole GPU Node (metadata and
status together), so `real_node` combines the pieces: a real label map, or an issue
thread's restated capacity/allocatable. Each case asserts what the README's "what a ledger
should say" (`truth`) asks for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import yaml

from app.domain.engine.build import build_snapshot
from app.domain.snapshot import NodeState, Snapshot
from app.web.views.finding_text import remedy_text
from tests import factories as f
from tests.real_inputs.harness import documents, real

Manifest = dict[str, Any]
NODES = "nodes"


def real_node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    capacity: Mapping[str, int] | None = None,
    allocatable: Mapping[str, int] | None = None,
) -> Manifest:
    """A Node from real pieces: a label map and/or reported extended resources."""
    node = f.node(name, labels=labels)
    caps = capacity if capacity is not None else allocatable
    for resource, count in (caps or {}).items():
        node["status"]["capacity"][resource] = str(count)
    for resource, count in (allocatable if allocatable is not None else caps or {}).items():
        node["status"]["allocatable"][resource] = str(count)
    return node


def gfd_allocatable(labels: Mapping[str, str]) -> dict[str, int]:
    """What the plugin advertises per GFD's labels: `<resource>.count` x `<resource>.replicas`."""
    found: dict[str, int] = {}
    for key, value in labels.items():
        if key.startswith("nvidia.com/") and key.endswith(".count"):
            resource = key.removesuffix(".count")
            replicas = int(labels.get(f"{resource}.replicas", "1"))
            found[resource] = int(value) * replicas
    return found


def states() -> dict[str, Manifest]:
    """The issue-reported node states by thread."""
    entries = yaml.safe_load(real(f"{NODES}/issue-reported-node-states.yaml").read_text())
    return {str(e["thread"]): e for e in entries}


def ledger(nodes: Sequence[Manifest], **kwargs: Any) -> Snapshot:
    plugin = kwargs.pop("daemonset", f.plugin_daemonset())
    pods = [f.plugin_pod(n["metadata"]["name"]) for n in nodes] + kwargs.pop("pods", [])
    state = f.cluster(daemonset=plugin, nodes=nodes, pods=pods, **kwargs)
    return build_snapshot(state, options=f.OPTIONS, now=f.NOW)


def only(snapshot: Snapshot) -> NodeState:
    [node] = snapshot.nodes
    return node


def figures(node: NodeState) -> dict[str, tuple[int, int, int]]:
    return {k: (r.allocatable, r.requested, r.free) for k, r in node.resources.items()}


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        (
            "gpu-operator-docs.mig-mixed-node-labels.json",
            {
                "nvidia.com/gpu": (0, 0, 0),  # gpu.replicas "0" under mixed
                "nvidia.com/mig-1g.10gb": (2, 0, 2),
                "nvidia.com/mig-2g.20gb": (1, 0, 1),
                "nvidia.com/mig-3g.40gb": (1, 0, 1),
            },
        ),
        ("gpu-operator-docs.mig-node-labels.json", {"nvidia.com/gpu": (1, 0, 1)}),
    ],
)
def test_node_states_real_label_map_gives_every_resource_of_the_node(
    file: str, expected: dict[str, tuple[int, int, int]]
) -> None:
    labels = json.loads(real(f"{NODES}/{file}").read_text())
    node = real_node("s4124-0073", labels=labels, allocatable=gfd_allocatable(labels))
    state = only(ledger([node]))
    assert state.gpu_node is True
    got = figures(state)
    assert {k: got.get(k, (0, 0, 0)) for k in expected} == expected
    assert state.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"


def test_node_states_gpu_operator_684_allocatable_stays_free_drops() -> None:
    case = states()["NVIDIA/gpu-operator#684"]
    node = real_node("n684", capacity=case["capacity"], allocatable=case["allocatable"])
    held = f.pod("train", node="n684", gpus=case["allocated_requests"]["nvidia.com/gpu"])
    state = only(ledger([node], pods=[held]))
    assert figures(state)["nvidia.com/gpu"] == (12, 4, 8)
    assert (state.allocatable, state.requested, state.free) == (12, 4, 8)


def test_node_states_gpu_operator_637_lists_every_mig_resource_and_the_empty_profile() -> None:
    case = states()["NVIDIA/gpu-operator#637"]
    state = only(ledger([real_node("n637", allocatable=case["allocatable"])]))
    assert figures(state) == {
        "nvidia.com/gpu": (2, 0, 2),
        "nvidia.com/mig-1g.10gb": (6, 0, 6),
        "nvidia.com/mig-2g.20gb": (4, 0, 4),
    }  # mig-3g.40gb advertised as 0: a profile with no instances holds no slots


def test_node_states_view_allocations_258_gpu_zero_node_keeps_its_four_mig_slots() -> None:
    case = states()["davidB/kubectl-view-allocations#258"]
    state = only(ledger([real_node("n258", capacity=case["capacity"])]))
    assert state.gpu_node is True  # the node does not vanish with nvidia.com/gpu: 0
    mig = {k: v for k, v in figures(state).items() if k.startswith("nvidia.com/mig-")}
    assert sum(a for a, _, _ in mig.values()) == 4


@pytest.mark.parametrize(
    ("thread", "shared"),
    [("NVIDIA/dcgm-exporter#151", 8), ("bottlerocket-os/bottlerocket#4418", 128)],
)
def test_node_states_renamed_shared_slots_live_under_gpu_shared(thread: str, shared: int) -> None:
    case = states()[thread]
    resources = case.get("allocatable") or case["capacity"]
    state = only(ledger([real_node("n", allocatable=resources)]))
    assert figures(state)["nvidia.com/gpu.shared"] == (shared, 0, shared)
    assert figures(state).get("nvidia.com/gpu", (0, 0, 0)) == (0, 0, 0)


def test_node_states_device_plugin_990_static_daemonset_ignores_the_config_label() -> None:
    case = states()["NVIDIA/k8s-device-plugin#990"]
    static = documents(real("nvidia-device-plugin-chart/static/nvidia-device-plugin.yml"))[0]
    node = real_node("n990", labels=case["labels"], allocatable=case["allocatable"])
    state = only(ledger([node], daemonset=static))
    assert (state.mode.value, state.replicas, state.allocatable) == ("basic", 1, 1)
    assert state.config is not None
    assert (state.config.source, state.config.label) == (None, "config0")


def test_node_states_device_plugin_1645_running_plugin_advertising_zero_is_a_finding() -> None:
    case = states()["NVIDIA/k8s-device-plugin#1645"]
    node = real_node("n1645", allocatable=case["allocatable"])
    report = f.report("n1645", readings=f.gpus(1, node_name="n1645"))
    state = only(ledger([node], reports=[report]))
    assert state.allocatable == 0 and state.physical_gpus == 1
    codes = {finding.code for finding in state.findings}
    assert codes & {"fail-on-init-silent-zero", "allocatable-mismatch"}
    remedy = " ".join(remedy_text(x, "en") for x in state.findings if x.code in codes)
    assert "delete pod" in remedy and "on n1645 only" in remedy


def test_node_states_gpu_operator_1388_visible_devices_edit_is_read_only() -> None:
    operator = documents(real("gpu-operator/derived/device-plugin-ds.no-config.yaml"))[0]
    container = operator["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [
        e if e["name"] != "NVIDIA_VISIBLE_DEVICES" else {**e, "value": "0"}
        for e in container["env"]
    ]
    node = real_node("n1388", allocatable={"nvidia.com/gpu": 2})
    pod = f.plugin_pod("n1388", daemonset=operator["metadata"]["name"], namespace="gpu-operator")
    state = f.cluster(daemonsets=[operator], nodes=[node], pods=[pod])
    snapshot = build_snapshot(state, options=f.OPTIONS, now=f.NOW)
    assert snapshot.nodes[0].config is not None
    assert snapshot.nodes[0].config.managed_by == "gpu-operator"
    assert "plugin-operator-managed" in {x.code for x in snapshot.findings}
