"""The engine's figures per mode and per node, with literal expected numbers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.domain.cluster import ClusterState
from app.domain.snapshot import Mode
from tests import factories as f
from tests.domain.worlds import config_manager_daemonset, snap, ts_world, world

Row = tuple[str, Mode, str, int, int | None, int | None, int | None]


MODES: list[tuple[str, ClusterState, Mode, str, int, int | None, int | None]] = [
    # id, state, mode, resource, replicas, expected, allocatable
    ("basic", world(), Mode.BASIC, "nvidia.com/gpu", 1, 4, 4),
    ("time-slicing", ts_world(4), Mode.TIME_SLICING, "nvidia.com/gpu", 4, 16, 16),
    (
        "time-slicing-renamed",
        ts_world(8, rename=True),
        Mode.TIME_SLICING,
        "nvidia.com/gpu.shared",
        8,
        32,
        32,
    ),
    ("mps", ts_world(2, mps=True), Mode.MPS, "nvidia.com/gpu", 2, 8, 8),
    (
        "invalid-config",
        ts_world(4, configmaps=[f.configmap({"config.yaml": "sharing: [\n"})], allocatable=None),
        Mode.UNKNOWN,
        "nvidia.com/gpu",
        1,
        None,
        None,
    ),
    (
        "config-manager-label",
        world(
            daemonset=config_manager_daemonset(),
            configmaps=[f.configmap({"ts8": f.time_slicing_yaml(8)})],
            node_labels={"nvidia.com/device-plugin.config": "ts8"},
            allocatable=32,
        ),
        Mode.TIME_SLICING,
        "nvidia.com/gpu",
        8,
        32,
        32,
    ),
    (
        "config-manager-no-label-empty-fallback",
        world(
            daemonset=config_manager_daemonset(),
            configmaps=[f.configmap({"ts8": f.time_slicing_yaml(8)})],
        ),
        Mode.BASIC,
        "nvidia.com/gpu",
        1,
        4,
        4,
    ),
]


@pytest.mark.parametrize(
    ("state", "mode", "resource", "replicas", "expected", "allocatable"),
    [row[1:] for row in MODES],
    ids=[row[0] for row in MODES],
)
def test_build_snapshot_mode_sets_node_figures(
    state: ClusterState,
    mode: Mode,
    resource: str,
    replicas: int,
    expected: int | None,
    allocatable: int | None,
) -> None:
    node = snap(state).nodes[0]
    assert (node.mode, node.resource, node.replicas) == (mode, resource, replicas)
    assert node.expected_slots == expected
    assert node.allocatable == allocatable
    assert node.physical_gpus == 4


def test_build_snapshot_time_slicing_plugin_state_reports_config_source() -> None:
    plugin = snap(ts_world(4, fail_gt_one=True)).plugin
    assert plugin.found is True
    assert plugin.mode is Mode.TIME_SLICING
    assert plugin.replicas == 4
    assert plugin.config_source == "configmap/nvidia-device-plugin-config#config.yaml"
    assert plugin.fail_requests_greater_than_one is True
    assert plugin.version == "v0.18.2"
    assert (plugin.ready, plugin.desired) == (1, 1)


def test_build_snapshot_host_split_counts_four_two_two_and_no_error() -> None:
    """4 physical, 2 given to Kubernetes, 2 kept for host training."""
    readings = [
        f.gpu(0),
        f.gpu(1),
        f.gpu(2, processes=[f.proc(9001, mib=70000)]),
        f.gpu(3, processes=[f.proc(9002, mib=65000)]),
    ]
    state = world(
        ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": f.host_split_uuids()}},
        allocatable=2,
        readings=readings,
        pods=[f.pod("infer", gpus=1)],
    )
    result = snap(state)
    node = result.nodes[0]
    assert (node.physical_gpus, node.visible_gpus, node.host_gpus) == (4, 2, 2)
    assert (node.expected_slots, node.allocatable, node.requested, node.free) == (2, 2, 1, 1)
    assert [g.role for g in node.gpus] == ["advertised", "advertised", "host", "host"]
    assert [g.slots for g in node.gpus] == [1, 1, 0, 0]
    assert [g.memory_host_mib for g in node.gpus] == [0, 0, 70000, 65000]
    assert result.totals.model_dump() == {
        "physical_gpus": 4,
        "visible_gpus": 2,
        "host_gpus": 2,
        "failing_gpus": 0,
        "allocatable": 2,
        "requested": 1,
        "free": 1,
        "stranded": 0,
        "pending": 0,
    }
    assert result.severity_counts()["error"] == 0
    assert result.findings == []


def test_build_snapshot_host_process_on_gpu2_in_advertised_split_raises_on_that_gpu() -> None:
    """Keep GPUs 0 and 2 for Kubernetes: a host process on GPU 2 is now on an advertised GPU."""
    visible = f"{f.gpu_uuid('gpu-1', 0)},{f.gpu_uuid('gpu-1', 2)}"
    readings = [f.gpu(0), f.gpu(1), f.gpu(2, processes=[f.proc(5150, mib=12000)]), f.gpu(3)]
    state = world(
        ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": visible}}, allocatable=2, readings=readings
    )
    result = snap(state)
    [item] = result.findings
    assert item.code == "host-process-on-advertised-gpu"
    assert item.gpu_uuid == "GPU-gpu-1-2"
    assert (item.evidence["pid"], item.evidence["used_memory_mib"]) == (5150, 12000)
    assert result.nodes[0].gpus[2].finding_codes == ["host-process-on-advertised-gpu"]


def test_build_snapshot_pods_holding_slots_fill_requested_and_free() -> None:
    pods = [
        f.pod("a", gpus=1),
        f.pod("b", gpus=2),
        f.pod("done", gpus=1, phase="Succeeded"),
        f.pod("crashed", gpus=1, phase="Failed"),
        f.pod("pending", gpus=1, node=None, phase="Pending"),
        f.pod("cpu-only", gpus=0),
        f.pod("elsewhere", gpus=1, node="gpu-2"),
    ]
    node = snap(ts_world(4, pods=pods)).nodes[0]
    assert node.requested == 3
    assert node.free == 13
    assert [(p.pod, p.slots) for p in node.pods] == [("ml/a", 1), ("ml/b", 2)]


def test_build_snapshot_free_never_negative_after_config_change() -> None:
    result = snap(world(allocatable=1, pods=[f.pod("a"), f.pod("b")]))
    node = result.nodes[0]
    assert (node.allocatable, node.requested, node.free) == (1, 2, 0)
    assert "requested-above-allocatable" in {x.code for x in node.findings}


def test_build_snapshot_renamed_counts_only_shared_requests() -> None:
    pods = [f.pod("old", gpus=1), f.pod("new", gpus=3, resource="nvidia.com/gpu.shared")]
    node = snap(ts_world(4, rename=True, pods=pods)).nodes[0]
    assert (node.resource, node.requested, node.free) == ("nvidia.com/gpu.shared", 3, 13)


def test_build_snapshot_missing_report_leaves_gpu_counts_unknown() -> None:
    result = snap(world(reports=[]))
    node = result.nodes[0]
    assert node.agent is None
    assert (node.physical_gpus, node.visible_gpus, node.host_gpus) == (None, None, None)
    assert node.expected_slots is None
    assert node.allocatable == 4
    assert node.gpus == []
    assert result.totals.physical_gpus == 0
    assert result.totals.allocatable == 4


def test_build_snapshot_stale_report_keeps_figures_but_marks_agent_stale() -> None:
    state = world(report_kwargs={"received_at": f.NOW - timedelta(seconds=300)})
    node = snap(state).nodes[0]
    assert node.agent is not None
    assert node.agent.fresh is False
    assert node.agent.age_s == 300.0
    assert node.physical_gpus == 4


def test_build_snapshot_fresh_report_age_is_measured_from_arrival() -> None:
    node = snap(world(report_kwargs={"received_at": f.NOW - timedelta(seconds=5)})).nodes[0]
    assert node.agent is not None
    assert (node.agent.age_s, node.agent.fresh) == (5.0, True)


def test_build_snapshot_holders_inferred_from_processes_then_index_order() -> None:
    readings = [
        f.gpu(0),
        f.gpu(1),
        f.gpu(2, processes=[f.proc(1, pod_uid="uid-b", mib=900)]),
        f.gpu(3),
    ]
    state = world(pods=[f.pod("a", gpus=2), f.pod("b", gpus=1)], readings=readings)
    gpus = snap(state).nodes[0].gpus
    assert [[(h.pod, h.slots, h.assigned) for h in g.holders] for g in gpus] == [
        [("ml/a", 1, False)],
        [("ml/a", 1, False)],
        [("ml/b", 1, False)],
        [],
    ]
    assert gpus[2].processes[0].pod == "ml/b"
    assert gpus[2].processes[0].owner == "pod"
    assert (gpus[2].memory_pods_mib, gpus[2].memory_host_mib) == (900, 0)


def test_build_snapshot_holders_from_kubelet_assignments_with_replica_ids() -> None:
    uuid = f.gpu_uuid("gpu-1", 3)
    state = ts_world(
        4,
        pods=[f.pod("a", gpus=2)],
        report_kwargs={"assignments": [f.assignment("a", [f"{uuid}::0", f"{uuid}::5"])]},
    )
    gpus = snap(state).nodes[0].gpus
    assert [(h.pod, h.slots, h.assigned) for h in gpus[3].holders] == [("ml/a", 2, True)]
    assert gpus[3].held_slots == 2
    assert gpus[0].holders == []


def test_build_snapshot_gpu_node_detection() -> None:
    nodes = [
        f.node("cpu-1", allocatable=None),
        f.node("gpu-1", allocatable=4),
        f.node("labelled", allocatable=None, labels={"nvidia.com/gpu.present": "true"}),
    ]
    result = snap(world(nodes=nodes, plugin_pods=[f.plugin_pod("gpu-1"), f.plugin_pod("labelled")]))
    assert {n.name: n.gpu_node for n in result.nodes} == {
        "cpu-1": False,
        "gpu-1": True,
        "labelled": True,
    }


def test_build_snapshot_k3s_from_kubelet_version() -> None:
    nodes = [f.node("a", allocatable=4, k3s=True), f.node("b", allocatable=4, k3s=False)]
    result = snap(world(nodes=nodes, reports=[]))
    assert [n.k3s for n in result.nodes] == [True, False]


def test_build_snapshot_totals_treat_unknown_as_zero() -> None:
    nodes = [f.node("gpu-1", allocatable=4), f.node("gpu-2", allocatable=None)]
    pods = [f.pod("a", node="gpu-1"), f.pod("b", node="gpu-2")]
    result = snap(world(nodes=nodes, pods=pods, reports=[f.report("gpu-1")]))
    assert result.totals.model_dump() == {
        "physical_gpus": 4,
        "visible_gpus": 4,
        "host_gpus": 0,
        "failing_gpus": 0,
        "allocatable": 4,
        "requested": 2,
        "free": 3,
        "stranded": 0,
        "pending": 0,
    }
    assert result.nodes[1].free is None


def test_build_snapshot_no_daemonset_leaves_mode_unknown() -> None:
    result = snap(world(ds=False))
    assert result.plugin.found is False
    assert result.plugin.mode is Mode.UNKNOWN
    assert result.nodes[0].mode is Mode.UNKNOWN
    assert [g.role for g in result.nodes[0].gpus] == ["unknown"] * 4


def test_build_snapshot_generated_at_is_now() -> None:
    assert snap(world()).generated_at == f.NOW


def test_build_snapshot_crash_looping_plugin_gpus_failing_not_kept_for_host() -> None:
    readings = [f.gpu(0), f.gpu(1)]
    state = world(
        ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": "2,3"}},
        allocatable=0,
        readings=readings,
        plugin_pods=[f.plugin_pod("gpu-1", ready=False, waiting_reason="CrashLoopBackOff")],
    )
    result = snap(state)
    node = result.nodes[0]
    assert (node.physical_gpus, node.host_gpus, node.failing_gpus) == (2, 0, 2)
    assert [g.role for g in node.gpus] == ["failing", "failing"]
    assert node.plugin_pod is not None and node.plugin_pod.state == "CrashLoopBackOff"
    assert (result.totals.host_gpus, result.totals.failing_gpus) == (0, 2)
