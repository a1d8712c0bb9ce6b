"""Every finding: raised by a broken cluster, absent from its healthy twin."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.findings.catalogue import CATALOGUE
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION
from app.domain.plugin_target import PluginTarget
from app.web.views.finding_text import finding_summary, finding_title, remedy_text
from tests import factories as f
from tests.domain.dra_worlds import DRA_CASES
from tests.domain.health_worlds import HEALTH_CASES
from tests.domain.worlds import config_manager_daemonset, snap, ts_world, world

SPLIT = f.host_split_uuids()


def _split(**kwargs: object) -> ClusterState:
    env = {"NVIDIA_VISIBLE_DEVICES": SPLIT}
    return world(ds_kwargs={"env": env}, allocatable=2, **kwargs)  # type: ignore[arg-type]


def _with_host_proc(index: int) -> ClusterState:
    readings = [
        f.gpu(
            i, processes=[f.proc(4242, mib=30000, command="python train.py")] if i == index else []
        )
        for i in range(4)
    ]
    return _split(readings=readings)


def _pod_proc(*, gpus: int, on: int = 0, assigned_to: int | None = None) -> ClusterState:
    readings = [
        f.gpu(i, processes=[f.proc(77, mib=5000, pod_uid="uid-job")] if i == on else [])
        for i in range(4)
    ]
    kwargs = {}
    if assigned_to is not None:
        kwargs = {"assignments": [f.assignment("job", [f.gpu_uuid("gpu-1", assigned_to)])]}
    return world(
        pods=[f.pod("job", gpus=gpus, uid="uid-job")], readings=readings, report_kwargs=kwargs
    )


def _fractions(shares: list[str], *, mib: int = 0, reserved: bool = True) -> ClusterState:
    """KAI fraction pods f0, f1... of group g1 on GPU 0 (reserved by its reservation pod)."""
    pods = [
        f.fraction_pod(f"f{n}", annotations={"gpu-fraction": share}, group="g1")
        for n, share in enumerate(shares)
    ]
    if reserved:
        pods.append(f.reservation_pod("g1", f.gpu_uuid("gpu-1", 0)))
    procs = [f.proc(70, mib=mib, pod_uid="uid-f0")] if mib else []
    readings = [f.gpu(i, processes=procs if i == 0 else []) for i in range(4)]
    return world(pods=pods, readings=readings)


def _cm_label(label: str) -> ClusterState:
    return world(
        daemonset=config_manager_daemonset(),
        configmaps=[f.configmap({"ts4": f.time_slicing_yaml(4)})],
        node_labels={"nvidia.com/device-plugin.config": label},
        allocatable=16,
    )


def _two_nodes(env: dict[str, str]) -> ClusterState:
    nodes = [f.node("gpu-1", allocatable=4), f.node("gpu-2", allocatable=4)]
    reports = [f.report("gpu-1"), f.report("gpu-2")]
    return world(ds_kwargs={"env": env}, nodes=nodes, reports=reports)


def _pressure(mib: int) -> ClusterState:
    procs = [f.proc(100 + i, mib=mib, pod_uid=f"uid-p{i}") for i in range(3)]
    pods = [f.pod(f"p{i}", uid=f"uid-p{i}") for i in range(3)]
    return ts_world(4, pods=pods, readings=[f.gpu(0, processes=procs), *f.gpus(4)[1:]])


Builder = Callable[[], ClusterState | tuple[ClusterState, AccountingOptions]]

CASES: list[tuple[str, Builder, Builder]] = [
    ("plugin-daemonset-missing", lambda: world(ds=False), lambda: world()),
    (
        "plugin-operator-managed",
        lambda: world(ds_kwargs={"operator": True}),
        lambda: world(),
    ),
    (
        "plugin-image-outdated",
        lambda: world(ds_kwargs={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.4-ubi9"}),
        lambda: world(ds_kwargs={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"}),
    ),
    (
        "config-mounted-not-used",
        lambda: ts_world(4, ds_kwargs={"config_file": None}, allocatable=4),
        lambda: ts_world(4),
    ),
    (
        "config-key-missing",
        lambda: ts_world(4, ds_kwargs={"config_file": "/config/sharing.yaml"}, allocatable=4),
        lambda: ts_world(4),
    ),
    (
        "plugin-config-rejected",
        lambda: ts_world(
            4, configmaps=[f.configmap({"config.yaml": f.time_slicing_yaml(1)})], allocatable=0
        ),
        lambda: ts_world(4),
    ),
    ("config-label-unknown", lambda: _cm_label("ts9"), lambda: _cm_label("ts4")),
    (
        "config-changed-after-start",
        lambda: ts_world(
            4,
            configmaps=[
                f.configmap(
                    {"config.yaml": f.time_slicing_yaml(8)}, changed_at=f.NOW - timedelta(hours=1)
                )
            ],
        ),
        lambda: ts_world(4, configmaps=[f.configmap({"config.yaml": f.time_slicing_yaml(4)})]),
    ),
    (
        "config-left-over",
        lambda: world(configmaps=[f.configmap({"config.yaml": f.time_slicing_yaml(4)})]),
        lambda: world(),
    ),
    (
        "serving-resource-mismatch",
        lambda: ts_world(4, rename=True),
        lambda: ts_world(4, rename=False),
    ),
    (
        "visible-devices-by-index",
        lambda: world(ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": "0,1"}}, allocatable=2),
        lambda: _split(),
    ),
    (
        "visible-devices-list-on-many-nodes",
        lambda: _two_nodes({"NVIDIA_VISIBLE_DEVICES": SPLIT}),
        lambda: _two_nodes({}),
    ),
    ("plugin-missing-on-node", lambda: world(plugin_pods=[], allocatable=None), lambda: world()),
    (
        "advertised-without-plugin",
        lambda: world(plugin_pods=[]),  # the kubelet still advertises the 4 GPUs
        lambda: world(plugin_pods=[], allocatable=None),
    ),
    (
        "plugin-pod-not-ready",
        lambda: world(
            plugin_pod_kwargs={"ready": False, "waiting_reason": "CrashLoopBackOff"},
            allocatable=None,
        ),
        lambda: world(),
    ),
    (
        "runtime-class-missing",
        lambda: world(ds_kwargs={"runtime_class": None}, allocatable=0),
        lambda: world(ds_kwargs={"runtime_class": "nvidia"}),
    ),
    (
        "unified-memory-unsupported",
        lambda: world(
            ds_kwargs={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"},
            readings=f.gpus(4, memory_total_mib=None, name="NVIDIA GB10"),
            allocatable=None,
        ),
        lambda: world(
            ds_kwargs={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.4"},
            readings=f.gpus(4, memory_total_mib=None, name="NVIDIA GB10"),
        ),
    ),
    (
        "privileged-visible-devices-ignored",
        lambda: world(
            ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": SPLIT}, "privileged": True},
            allocatable=4,
        ),
        lambda: world(
            ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": SPLIT}, "privileged": False},
            allocatable=2,
        ),
    ),
    (
        "fail-on-init-silent-zero",
        lambda: world(ds_kwargs={"env": {"FAIL_ON_INIT_ERROR": "false"}}, allocatable=None),
        lambda: world(ds_kwargs={"env": {"FAIL_ON_INIT_ERROR": "false"}}, allocatable=4),
    ),
    ("unhealthy-devices", lambda: world(capacity=4, allocatable=3), lambda: world()),
    ("allocatable-mismatch", lambda: world(allocatable=3), lambda: world(allocatable=4)),
    (
        "requested-above-allocatable",
        lambda: world(pods=[f.pod(f"p{i}") for i in range(5)]),
        lambda: world(pods=[f.pod(f"p{i}") for i in range(4)]),
    ),
    (
        "gfd-labels-disagree",
        lambda: world(
            node_labels={
                "nvidia.com/gpu.replicas": "8",
                "nvidia.com/gpu.sharing-strategy": "time-slicing",
            }
        ),
        lambda: world(
            node_labels={
                "nvidia.com/gpu.replicas": "1",
                "nvidia.com/gpu.sharing-strategy": "none",
            }
        ),
    ),
    (
        "visible-device-not-on-node",
        lambda: world(
            ds_kwargs={"env": {"NVIDIA_VISIBLE_DEVICES": SPLIT + ",GPU-elsewhere-9"}},
            allocatable=2,
        ),
        lambda: _split(),
    ),
    ("agent-report-missing", lambda: world(reports=[]), lambda: world()),
    (
        "agent-report-stale",
        lambda: world(report_kwargs={"received_at": f.NOW - timedelta(minutes=10)}),
        lambda: world(report_kwargs={"received_at": f.NOW - timedelta(seconds=30)}),
    ),
    (
        "agent-report-error",
        lambda: world(
            readings=[], report_kwargs={"source": "none", "error": "NVML: driver not loaded"}
        ),
        lambda: world(),
    ),
    ("host-process-on-advertised-gpu", lambda: _with_host_proc(1), lambda: _with_host_proc(2)),
    (
        "host-memory-on-advertised-gpu",
        lambda: world(readings=[f.gpu(0, memory_used_mib=6000), *f.gpus(4)[1:]]),
        lambda: world(readings=[f.gpu(0, memory_used_mib=400), *f.gpus(4)[1:]]),
    ),
    ("shared-gpu-memory-pressure", lambda: _pressure(25000), lambda: _pressure(10000)),
    ("pod-process-without-slot", lambda: _pod_proc(gpus=0), lambda: _pod_proc(gpus=1)),
    (
        "gpu-fractions-over-one",
        lambda: _fractions(["0.5", "0.6"]),
        lambda: _fractions(["0.5", "0.5"]),
    ),
    (
        "gpu-fraction-memory-over-limit",
        lambda: _fractions(["0.25"], mib=30000),
        lambda: _fractions(["0.5"], mib=30000),
    ),
    (
        "gpu-fraction-unreserved",
        lambda: _fractions(["0.5"], mib=1000, reserved=False),
        lambda: _fractions(["0.5"], mib=1000),
    ),
    (
        "pod-process-on-unassigned-gpu",
        lambda: _pod_proc(gpus=1, on=1, assigned_to=0),
        lambda: _pod_proc(gpus=1, on=0, assigned_to=0),
    ),
    (
        "pod-sets-visible-devices",
        lambda: world(pods=[f.pod("rogue", gpus=0, env={"NVIDIA_VISIBLE_DEVICES": "all"})]),
        lambda: world(pods=[f.pod("rogue", gpus=0)]),
    ),
    (
        "multi-slot-request-rejected",
        lambda: ts_world(4, fail_gt_one=True, pods=[f.pod("big", gpus=2)]),
        lambda: ts_world(4, fail_gt_one=True, pods=[f.pod("big", gpus=1)]),
    ),
    (
        "multi-slot-request-shared",
        lambda: ts_world(4, pods=[f.pod("big", gpus=2)]),
        lambda: ts_world(4, pods=[f.pod("big", gpus=1)]),
    ),
    ("slots-stranded", lambda: _cordoned(True), lambda: _cordoned(False)),
    (
        "gpu-double-booked",
        lambda: _renamed([f.pod("old")]),
        lambda: _renamed([f.pod("new", resource="nvidia.com/gpu.shared")]),
    ),
    (
        "device-id-from-before-switch",
        lambda: _held_ids(ts_world, f.gpu_uuid("gpu-1", 2)),
        lambda: _held_ids(ts_world, f.gpu_uuid("gpu-1", 2) + "::3"),
    ),
    (
        "mps-daemon-missing",
        lambda: ts_world(2, mps=True, fail_gt_one=True, allocatable=0),
        lambda: ts_world(
            2,
            mps=True,
            fail_gt_one=True,
            allocatable=0,
            node_labels={"nvidia.com/mps.capable": "true"},
        ),
    ),
    (
        "config-namespace-not-read",
        lambda: (_other_namespace(), AccountingOptions(config_namespaces=())),
        lambda: (_other_namespace(), AccountingOptions(config_namespaces=("gpu-operator",))),
    ),
    (
        "gpu-demand-pending",
        lambda: world(pods=[f.pod("wide", node=None, gpus=5, phase="Pending")]),
        lambda: world(pods=[f.pod("wide", node=None, gpus=1, phase="Pending")]),
    ),
]


def _other_namespace() -> ClusterState:
    """The main DaemonSet runs nowhere; the GPU Operator's, in its namespace, owns gpu-1."""
    ds = f.plugin_daemonset(
        namespace="gpu-operator", configmap="ts", config_file="/config/config.yaml"
    )
    cm = f.configmap({"config.yaml": f.time_slicing_yaml(4)}, name="ts", namespace="gpu-operator")
    plugin = f.plugin_pod("gpu-1", namespace="gpu-operator")
    main = f.plugin_daemonset()
    main["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "none"}
    return world(
        daemonset=main, daemonsets=[ds], configmaps=[cm], plugin_pods=[plugin], allocatable=16
    )


def _cordoned(cordoned: bool) -> ClusterState:
    node = f.node("gpu-1", allocatable=4)
    node["spec"] = {"unschedulable": cordoned}
    return world(nodes=[node])


def _held_ids(make: Callable[..., ClusterState], device: str) -> ClusterState:
    """A running one-slot pod whose kubelet assignment (PodResources) is `device`."""
    return make(
        pods=[f.pod("job", gpus=1, uid="uid-job")],
        report_kwargs={"assignments": [f.assignment("job", [device])]},
    )


def _renamed(pods: list[f.Manifest]) -> ClusterState:
    node = f.node("gpu-1", allocatable=16, resource="nvidia.com/gpu.shared")
    for key in ("capacity", "allocatable"):
        node["status"][key]["nvidia.com/gpu"] = "0"
    return ts_world(4, rename=True, nodes=[node], pods=pods)


CASES += DRA_CASES
CASES += HEALTH_CASES
CASES.append(
    (
        "object-set-aside",
        lambda: world(pods=[f.fraction_pod("odd", annotations={"gpu-memory": "\u00b2"})]),
        lambda: world(pods=[f.fraction_pod("odd", annotations={"gpu-memory": "2000"})]),
    )
)


def _codes(
    state: ClusterState | tuple[ClusterState, AccountingOptions],
    options: AccountingOptions = f.OPTIONS,
) -> set[str]:
    if isinstance(state, tuple):
        state, options = state
    return {item.code for item in snap(state, options=options).findings}


@pytest.mark.parametrize(("code", "broken", "healthy"), CASES, ids=[c[0] for c in CASES])
def test_finding_broken_state_raises_and_healthy_twin_does_not(
    code: str, broken: Builder, healthy: Builder
) -> None:
    assert code in _codes(broken())
    assert code not in _codes(healthy())


HISTORY_CODES = {"slot-held-idle", "gpu-utilization-low"}  # tested in test_usage_idle.py


def test_finding_table_covers_every_catalogued_code() -> None:
    assert {c[0] for c in CASES} | HISTORY_CODES == set(CATALOGUE)


@pytest.mark.parametrize(
    "healthy",
    [
        lambda: world(),
        lambda: _split(),
        lambda: ts_world(4),
        lambda: ts_world(2, mps=True, fail_gt_one=True),
        lambda: _cm_label("ts4"),
    ],
    ids=["basic", "host-split", "time-slicing", "mps", "config-manager"],
)
def test_findings_healthy_cluster_raises_none(healthy: Builder) -> None:
    assert snap(healthy()).findings == []


def test_host_process_finding_names_gpu_pid_and_memory() -> None:
    result = snap(_with_host_proc(1))
    [item] = [x for x in result.findings if x.code == "host-process-on-advertised-gpu"]
    assert item.gpu_uuid == "GPU-gpu-1-1"
    assert item.node == "gpu-1"
    assert item.severity.value == "error"
    assert item.evidence["pid"] == 4242
    assert item.evidence["used_memory_mib"] == 30000
    assert item.evidence["command"] == "python train.py"
    gpu1 = result.nodes[0].gpus[1]
    assert gpu1.finding_codes == ["host-process-on-advertised-gpu"]
    assert gpu1.worst_severity is not None and gpu1.worst_severity.value == "error"


@pytest.mark.parametrize(
    ("make", "device", "stale"),
    [
        (ts_world, "GPU-gpu-1-2", True),  # basic -> time-slicing: the whole-GPU ID kept
        (ts_world, "GPU-gpu-1-2::0", False),
        (world, "GPU-gpu-1-2::1", True),  # time-slicing -> basic: a replica ID kept
        (world, "GPU-gpu-1-2", False),
    ],
)
def test_device_id_from_before_switch_names_the_pod_and_the_gpu(
    make: Callable[..., ClusterState], device: str, stale: bool
) -> None:
    found = [
        item
        for item in snap(_held_ids(make, device)).findings
        if item.code == "device-id-from-before-switch"
    ]
    if not stale:
        assert found == []
        return
    assert [(i.pod, i.node, i.gpu_uuid) for i in found] == [("ml/job", "gpu-1", "GPU-gpu-1-2")]
    assert found[0].evidence["device_ids"] == device
    assert found[0].remedy.startswith("kubectl -n ml delete pod job")


def test_runtime_class_remedy_names_the_real_daemonset() -> None:
    state = world(ds_kwargs={"runtime_class": None, "namespace": "gpu"}, allocatable=0)
    options = AccountingOptions(plugin=PluginTarget(namespace="gpu"))
    [item] = [x for x in snap(state, options=options).findings if x.code == "runtime-class-missing"]
    assert "kubectl -n gpu patch daemonset nvidia-device-plugin-daemonset" in item.remedy
    assert '"runtimeClassName":"nvidia"' in item.remedy


def test_runtime_class_missing_on_non_k3s_node_not_raised() -> None:
    state = world(
        ds_kwargs={"runtime_class": None},
        nodes=[f.node("gpu-1", allocatable=0, k3s=False)],
    )
    assert "runtime-class-missing" not in _codes(state)


def test_config_changed_after_start_detected_by_hash_annotation() -> None:
    annotations = {CONFIG_HASH_ANNOTATION: "0000000000000000"}
    state = ts_world(4, plugin_pod_kwargs={"annotations": annotations})
    assert "config-changed-after-start" in _codes(state)


def test_multi_slot_request_in_mps_is_always_rejected() -> None:
    state = ts_world(2, mps=True, pods=[f.pod("big", gpus=2)], allocatable=8)
    codes = _codes(state)
    assert "multi-slot-request-rejected" in codes
    assert "multi-slot-request-shared" not in codes


def test_findings_sorted_by_severity_then_node() -> None:
    state = world(
        ds_kwargs={"operator": True, "runtime_class": None},
        allocatable=0,
        report_kwargs={"received_at": f.NOW - timedelta(hours=1)},
    )
    ranks = {"error": 0, "warning": 1, "info": 2}
    order = [(ranks[x.severity.value], x.node or "") for x in snap(state).findings]
    assert order == sorted(order)
    assert order[0][0] == 0 and order[-1][0] == 2


def test_every_finding_has_evidence_and_remedy_in_broken_cases() -> None:
    for _, broken, _ in CASES:
        built = broken()
        state, options = built if isinstance(built, tuple) else (built, f.OPTIONS)
        for item in snap(state, options=options).findings:
            assert item.evidence, item.code
            assert remedy_text(item, "en"), item.code
            assert finding_title(item, "en") != finding_summary(item.code, "en"), item.code
