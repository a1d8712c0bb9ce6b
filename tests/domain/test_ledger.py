"""The per-GPU ledger on the clusters people run, each built from plain objects.

Every case states its figures literally and that no other finding is raised.
"""

from __future__ import annotations

from typing import Any

from app.domain.accounting.ledger.devices import mig_resource_name
from app.domain.report import DeviceAssignment, GpuReading, MigDeviceReading
from app.domain.snapshot import NodeConfig, PendingDemand, ResourceState, SlotHolder
from tests import factories as f
from tests.domain.worlds import config_manager_daemonset, snap, ts_world, world

MIG_1G = "nvidia.com/mig-1g.10gb"


def rs(allocatable: int, requested: int, free: int, stranded: int = 0) -> ResourceState:
    return ResourceState(allocatable=allocatable, requested=requested, free=free, stranded=stranded)


def codes(result: Any) -> list[str]:
    return sorted(x.code for x in result.findings)


def mig_gpu(index: int, profiles: list[str], *, node_name: str = "gpu-1") -> GpuReading:
    parent = f.gpu_uuid(node_name, index)
    devices = [
        MigDeviceReading(
            uuid=f"MIG-{node_name}-{index}-{n}",
            profile=profile,
            gpu_instance=n,
            compute_instance=0,
            memory_total_mib=9856,
            memory_used_mib=0,
        )
        for n, profile in enumerate(profiles)
    ]
    base = f.gpu(index, node_name=node_name, uuid=parent, mig_mode="enabled")
    return base.model_copy(update={"mig_devices": devices})


def mig_node(resources: dict[str, int], name: str = "gpu-1") -> f.Manifest:
    node = f.node(name, allocatable=None)
    for key in ("capacity", "allocatable"):
        node["status"][key].update({k: str(v) for k, v in resources.items()})
    return node


def helm_daemonset() -> f.Manifest:
    """NVIDIA's Helm chart, release `nvidia-device-plugin`: config-manager init + sidecar."""
    manager_env = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"},
        {"name": "CONFIG_FILE_SRCDIR", "value": "/available-configs"},
        {"name": "CONFIG_FILE_DST", "value": "/config/config.yaml"},
        {"name": "DEFAULT_CONFIG", "value": ""},
        {"name": "FALLBACK_STRATEGIES", "value": "named,single"},
    ]
    mounts = [
        {"name": "available-configs", "mountPath": "/available-configs"},
        {"name": "config", "mountPath": "/config"},
    ]
    manager = {
        "name": "nvidia-device-plugin-sidecar",
        "image": f.IMAGE,
        "command": ["config-manager"],
        "env": manager_env,
        "volumeMounts": mounts,
    }
    ds = f.plugin_daemonset(
        name="nvidia-device-plugin",
        namespace="nvidia-device-plugin",
        config_file="/config/config.yaml",
        extra_containers=[manager],
        extra_volumes=[
            {"name": "available-configs", "configMap": {"name": "nvidia-device-plugin-configs"}},
            {"name": "config", "emptyDir": {}},
        ],
    )
    pod_spec = ds["spec"]["template"]["spec"]
    pod_spec["containers"][0]["name"] = "nvidia-device-plugin-ctr"
    pod_spec["containers"][0]["volumeMounts"].append({"name": "config", "mountPath": "/config"})
    pod_spec["initContainers"] = [{**manager, "name": "nvidia-device-plugin-init"}]
    ds["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "Helm"
    return ds


def test_helm_chart_install_is_found_through_its_daemonset() -> None:
    helm_cm = f.configmap(
        {"ts4": f.time_slicing_yaml(4)},
        name="nvidia-device-plugin-configs",
        namespace="nvidia-device-plugin",
    )
    plugin = f.plugin_pod(
        "gpu-1", daemonset="nvidia-device-plugin", namespace="nvidia-device-plugin"
    )
    result = snap(
        world(
            ds=False,
            daemonsets=[helm_daemonset()],
            configmaps=[helm_cm],
            allocatable=16,
            plugin_pods=[plugin],
        )
    )
    node = result.nodes[0]
    assert result.mode == "time-slicing"
    assert (node.mode.value, node.expected_slots, node.allocatable) == ("time-slicing", 16, 16)
    assert node.config == NodeConfig(
        daemonset="nvidia-device-plugin/nvidia-device-plugin",
        managed_by="helm",
        source="configmap/nvidia-device-plugin-configs#ts4",
        configmap="nvidia-device-plugin-configs",
        key="ts4",
        label=None,
        mig_strategy="none",
        allocation_policy="distributed",
        change_with=(
            "helm upgrade <release> -n nvidia-device-plugin --reuse-values -f values.yaml  "
            "# config.map / config.default; per node: kubectl label node gpu-1 "
            "nvidia.com/device-plugin.config=<config key> --overwrite"
        ),
    )
    assert codes(result) == []


def test_operator_static_config_under_its_own_name_is_read() -> None:
    ds = f.plugin_daemonset(
        namespace="gpu-operator",
        configmap="time-slicing-config",
        config_file="/config/any",
        operator=True,
    )
    cm = f.configmap(
        {"any": f.time_slicing_yaml(2)}, name="time-slicing-config", namespace="gpu-operator"
    )
    plugin = f.plugin_pod("gpu-1", namespace="gpu-operator")
    result = snap(
        world(ds=False, daemonsets=[ds], configmaps=[cm], allocatable=8, plugin_pods=[plugin])
    )
    node = result.nodes[0]
    assert node.config is not None
    assert (node.config.managed_by, node.config.source) == (
        "gpu-operator",
        "configmap/time-slicing-config#any",
    )
    assert node.config.change_with == (
        "kubectl edit clusterpolicy cluster-policy  # spec.devicePlugin.config (name, default)"
    )
    assert (node.expected_slots, node.allocatable) == (8, 8)
    assert codes(result) == ["plugin-operator-managed"]


def test_two_plugin_daemonsets_each_own_their_nodes_and_mode_is_mixed() -> None:
    second = f.plugin_daemonset(
        name="nvidia-device-plugin-ts",
        configmap="ts-config",
        config_file="/config/config.yaml",
    )
    second["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "shared"}
    nodes = [
        f.node("gpu-1", allocatable=4),
        f.node("gpu-2", allocatable=16, labels={"pool": "shared"}),
    ]
    plugin_pods = [
        f.plugin_pod("gpu-1"),
        f.plugin_pod("gpu-2", daemonset="nvidia-device-plugin-ts"),
    ]
    result = snap(
        world(
            daemonsets=[second],
            configmaps=[f.configmap({"config.yaml": f.time_slicing_yaml(4)}, name="ts-config")],
            nodes=nodes,
            plugin_pods=plugin_pods,
            reports=[f.report("gpu-1"), f.report("gpu-2")],
        )
    )
    assert [(n.name, n.mode.value, n.expected_slots, n.allocatable) for n in result.nodes] == [
        ("gpu-1", "basic", 4, 4),
        ("gpu-2", "time-slicing", 16, 16),
    ]
    assert [n.config.daemonset for n in result.nodes if n.config] == [
        "kube-system/nvidia-device-plugin-daemonset",
        "kube-system/nvidia-device-plugin-ts",
    ]
    assert result.mode == "mixed"
    assert codes(result) == []


def test_node_with_its_own_config_label_shows_label_and_key() -> None:
    state = world(
        daemonset=config_manager_daemonset(),
        configmaps=[f.configmap({"ts4": f.time_slicing_yaml(4), "ts2": f.time_slicing_yaml(2)})],
        node_labels={"nvidia.com/device-plugin.config": "ts2"},
        allocatable=8,
    )
    result = snap(state)
    node = result.nodes[0]
    assert node.config is not None
    assert (node.config.label, node.config.key, node.expected_slots) == ("ts2", "ts2", 8)
    assert codes(result) == []


def _mixed_world(**kwargs: Any) -> Any:
    readings = [mig_gpu(0, ["1g.10gb"] * 7), mig_gpu(1, ["1g.10gb"] * 7), f.gpu(2)]
    return world(
        ds_kwargs={"env": {"MIG_STRATEGY": "mixed"}},
        nodes=[mig_node({"nvidia.com/gpu": 1, MIG_1G: 14})],
        readings=readings,
        **kwargs,
    )


def test_mig_mixed_counts_every_mig_device_per_resource() -> None:
    pods = [
        f.pod("a", resource=MIG_1G),
        f.pod("b", resource=MIG_1G),
        f.pod("whole", resource="nvidia.com/gpu"),
    ]
    result = snap(_mixed_world(pods=pods))
    node = result.nodes[0]
    assert node.resources == {"nvidia.com/gpu": rs(1, 1, 0), MIG_1G: rs(14, 2, 12)}
    assert (node.expected_slots, node.allocatable, node.free) == (1, 1, 0)
    assert [g.slots for g in node.gpus] == [7, 7, 1]
    assert [len(g.mig_devices) for g in node.gpus] == [7, 7, 0]
    first = node.gpus[0].mig_devices[0]
    assert (first.uuid, first.profile, first.resource, first.slots) == (
        "MIG-gpu-1-0-0",
        "1g.10gb",
        MIG_1G,
        1,
    )
    held = [(d.uuid, [h.pod for h in d.holders]) for d in node.gpus[0].mig_devices[:3]]
    assert held == [("MIG-gpu-1-0-0", ["ml/a"]), ("MIG-gpu-1-0-1", ["ml/b"]), ("MIG-gpu-1-0-2", [])]
    assert node.gpus[2].holders == [
        SlotHolder(pod="ml/whole", slots=1, assigned=False, resource="nvidia.com/gpu")
    ]
    assert result.resources == {"nvidia.com/gpu": rs(1, 1, 0), MIG_1G: rs(14, 2, 12)}
    assert sum(r.allocatable for r in result.resources.values()) == 15
    assert codes(result) == []


def test_node_pods_mig_holders_listed_with_their_resource() -> None:
    # Issue 22: the ledger counted the MIG slices but the node's pods named only the
    # holders of nvidia.com/gpu.
    pods = [
        f.pod("a", resource=MIG_1G),
        f.pod("b", resource=MIG_1G),
        f.pod("whole", resource="nvidia.com/gpu"),
    ]
    node = snap(_mixed_world(pods=pods)).nodes[0]
    assert [(p.pod, p.resource, p.slots) for p in node.pods] == [
        ("ml/a", MIG_1G, 1),
        ("ml/b", MIG_1G, 1),
        ("ml/whole", "nvidia.com/gpu", 1),
    ]
    assert (node.requested, node.free) == (1, 0)  # the node's own resource only
    assert node.gpus[0].holders == [
        SlotHolder(pod="ml/a", slots=1, assigned=False, resource=MIG_1G),
        SlotHolder(pod="ml/b", slots=1, assigned=False, resource=MIG_1G),
    ]


def test_node_pods_all_mig_node_lists_its_mig_holders() -> None:
    state = world(
        ds_kwargs={"env": {"MIG_STRATEGY": "mixed"}},
        nodes=[mig_node({MIG_1G: 7})],
        readings=[mig_gpu(0, ["1g.10gb"] * 7)],
        pods=[f.pod("infer", resource=MIG_1G, gpus=2)],
    )
    node = snap(state).nodes[0]
    assert [(p.pod, p.resource, p.slots) for p in node.pods] == [("ml/infer", MIG_1G, 2)]
    held = [(d.uuid, [(h.pod, h.slots) for h in d.holders]) for d in node.gpus[0].mig_devices[:3]]
    assert held == [
        ("MIG-gpu-1-0-0", [("ml/infer", 1)]),
        ("MIG-gpu-1-0-1", [("ml/infer", 1)]),
        ("MIG-gpu-1-0-2", []),
    ]
    assert node.resources == {MIG_1G: rs(7, 2, 5)}


def test_mig_mixed_all_mig_node_is_not_silent_zero() -> None:
    readings = [mig_gpu(0, ["1g.10gb"] * 7)]
    result = snap(
        world(
            ds_kwargs={"env": {"MIG_STRATEGY": "mixed", "FAIL_ON_INIT_ERROR": "false"}},
            nodes=[mig_node({MIG_1G: 7})],
            readings=readings,
        )
    )
    node = result.nodes[0]
    assert node.resources == {MIG_1G: rs(7, 0, 7)}
    assert (node.expected_slots, node.capacity) == (0, None)
    assert codes(result) == []


def test_mig_mixed_device_short_of_its_resource_is_a_mismatch() -> None:
    result = snap(
        world(
            ds_kwargs={"env": {"MIG_STRATEGY": "mixed"}},
            nodes=[mig_node({MIG_1G: 6})],
            readings=[mig_gpu(0, ["1g.10gb"] * 7)],
        )
    )
    mismatch = [x for x in result.findings if x.code == "allocatable-mismatch"]
    assert [x.evidence for x in mismatch] == [
        {"allocatable": 6, "expected_slots": 7, "resource": MIG_1G}
    ]


def test_mig_single_counts_mig_devices_as_gpu() -> None:
    readings = [mig_gpu(0, ["3g.40gb"] * 2), mig_gpu(1, ["3g.40gb"] * 2)]
    result = snap(
        world(ds_kwargs={"env": {"MIG_STRATEGY": "single"}}, allocatable=4, readings=readings)
    )
    node = result.nodes[0]
    assert (node.expected_slots, node.allocatable) == (4, 4)
    assert [g.slots for g in node.gpus] == [2, 2]
    assert {d.resource for g in node.gpus for d in g.mig_devices} == {"nvidia.com/gpu"}
    assert codes(result) == []


def test_mig_profile_names_follow_the_plugin_version() -> None:
    v19, v20 = (0, 19, 3), (0, 20, 0)
    assert [
        mig_resource_name(p, v19) for p in ("1g.10gb", "1g.10gb+me", "1g.24gb-me", "1c.2g.20gb")
    ] == [MIG_1G, MIG_1G, "nvidia.com/mig-1g.24gb", "nvidia.com/mig-2g.20gb"]
    assert [
        mig_resource_name(p, v20) for p in ("1g.10gb+me", "1g.24gb-me", "1g.24gb+gfx", "1c.2g.20gb")
    ] == [
        "nvidia.com/mig-1g.10gb.me",
        "nvidia.com/mig-1g.24gb-me",
        "nvidia.com/mig-1g.24gb.gfx",
        None,
    ]


def _two_nodes(second: f.Manifest) -> Any:
    return world(
        nodes=[f.node("gpu-1", allocatable=4), second],
        pods=[f.pod("a", node="gpu-1"), f.pod("b", node="gpu-2")],
        reports=[f.report("gpu-1"), f.report("gpu-2")],
    )


def test_cordoned_node_slots_are_stranded_not_free() -> None:
    second = f.node("gpu-2", allocatable=4)
    second["spec"] = {"unschedulable": True}
    result = snap(_two_nodes(second))
    cordoned = result.nodes[1]
    assert (cordoned.schedulable, cordoned.unschedulable_reason) == (False, "cordoned")
    assert (cordoned.free, cordoned.stranded) == (0, 3)
    assert cordoned.resources == {"nvidia.com/gpu": rs(4, 1, 0, 3)}
    assert (result.totals.free, result.totals.stranded) == (3, 3)
    assert codes(result) == ["slots-stranded"]
    assert result.findings[0].evidence == {"reason": "cordoned", "nvidia.com/gpu": 3}


def test_not_ready_and_tainted_nodes_strand_but_gpu_taints_do_not() -> None:
    not_ready = f.node("gpu-2", allocatable=4, ready=False)
    assert snap(_two_nodes(not_ready)).nodes[1].unschedulable_reason == "NotReady"
    tainted = f.node("gpu-2", allocatable=4)
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "train", "effect": "NoSchedule"}]}
    assert snap(_two_nodes(tainted)).nodes[1].unschedulable_reason == (
        "tainted dedicated=train:NoSchedule"
    )
    gpu_taint = f.node("gpu-2", allocatable=4)
    gpu_taint["spec"] = {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}
    result = snap(_two_nodes(gpu_taint))
    assert (result.nodes[1].schedulable, result.totals.free, result.totals.stranded) == (
        True,
        6,
        0,
    )


def test_overcommitted_node_does_not_eat_other_nodes_free() -> None:
    over = f.node("gpu-2", allocatable=1)
    state = world(
        nodes=[f.node("gpu-1", allocatable=4), over],
        pods=[f.pod("a", node="gpu-2"), f.pod("b", node="gpu-2"), f.pod("c", node="gpu-2")],
        reports=[f.report("gpu-1"), f.report("gpu-2", f.gpus(1, node_name="gpu-2"))],
    )
    result = snap(state)
    assert [n.free for n in result.nodes] == [4, 0]
    assert result.totals.free == 4
    assert result.nodes[1].resources == {"nvidia.com/gpu": rs(1, 3, 0)}
    assert codes(result) == ["requested-above-allocatable"]


def test_rename_leaves_old_resource_holders_double_booked() -> None:
    node = f.node("gpu-1", allocatable=16, resource="nvidia.com/gpu.shared")
    for key in ("capacity", "allocatable"):
        node["status"][key]["nvidia.com/gpu"] = "0"
    pods = [
        f.pod("old-1"),
        f.pod("old-2"),
        f.pod("new-1", resource="nvidia.com/gpu.shared"),
        f.pod("new-2", resource="nvidia.com/gpu.shared"),
        f.pod("new-3", resource="nvidia.com/gpu.shared"),
    ]
    result = snap(ts_world(4, rename=True, nodes=[node], pods=pods))
    got = result.nodes[0]
    assert got.resources == {"nvidia.com/gpu": rs(0, 2, 0), "nvidia.com/gpu.shared": rs(16, 3, 13)}
    assert (got.requested, got.free) == (3, 13)
    assert codes(result) == ["gpu-double-booked", "serving-resource-mismatch"]
    booked = next(x for x in result.findings if x.code == "gpu-double-booked")
    assert booked.evidence == {
        "resource": "nvidia.com/gpu",
        "requested": 2,
        "allocatable": 0,
        "advertised_as": "nvidia.com/gpu.shared",
        "pods": "ml/old-1,ml/old-2",
    }


def test_pending_demand_says_why_pods_do_not_fit() -> None:
    pods = [
        f.pod("a"),
        f.pod("b"),
        f.pod("c"),
        f.pod("wide-1", node=None, gpus=2, phase="Pending"),
        f.pod("wide-2", node=None, gpus=3, phase="Pending"),
        f.pod("mig", node=None, resource="nvidia.com/mig-3g.40gb", phase="Pending"),
        f.pod("done", node=None, phase="Failed"),
    ]
    result = snap(world(pods=pods))
    assert result.pending_demand == [
        PendingDemand(
            resource="nvidia.com/gpu",
            pods=2,
            slots=5,
            oldest_s=3600.0,
            reason="too-large",
            smallest=2,
            largest=1,
        ),
        PendingDemand(
            resource="nvidia.com/mig-3g.40gb",
            pods=1,
            slots=1,
            oldest_s=3600.0,
            reason="not-advertised",
            smallest=1,
            largest=0,
        ),
    ]
    assert result.totals.pending == 6
    assert codes(result) == ["gpu-demand-pending", "gpu-demand-pending"]


def test_pending_demand_refused_by_fail_requests_greater_than_one() -> None:
    pods = [f.pod("big", node=None, gpus=2, phase="Pending")]
    result = snap(ts_world(4, fail_gt_one=True, pods=pods))
    assert [(d.reason, d.smallest) for d in result.pending_demand] == [("refused-above-one", 2)]


def test_pending_demand_that_fits_raises_no_finding() -> None:
    result = snap(world(pods=[f.pod("next", node=None, phase="Pending")]))
    assert [(d.reason, d.largest) for d in result.pending_demand] == [("fits", 4)]
    assert codes(result) == []


def test_kubelet_assignments_name_replicas_and_mig_devices() -> None:
    assignments = [
        f.assignment("a", [f"{f.gpu_uuid('gpu-1', 0)}::0", f"{f.gpu_uuid('gpu-1', 0)}::5"]),
        f.assignment("b", [f"{f.gpu_uuid('gpu-1', 1)}::2"]),
    ]
    pods = [f.pod("a", gpus=2), f.pod("b")]
    result = snap(ts_world(4, pods=pods, report_kwargs={"assignments": assignments}))
    gpus = result.nodes[0].gpus
    assert gpus[0].holders == [
        SlotHolder(
            pod="ml/a",
            slots=2,
            assigned=True,
            assignment="kubelet",
            resource="nvidia.com/gpu",
            container="main",
            replicas=[0, 5],
        )
    ]
    assert [(h.pod, h.replicas) for h in gpus[1].holders] == [("ml/b", [2])]
    assert codes(result) == ["multi-slot-request-shared"]  # a's 2 replicas share GPU 0


def test_kubelet_assignment_of_a_mig_device_lands_on_that_device() -> None:
    assignments = [
        DeviceAssignment(
            namespace="ml", pod="a", container="main", resource=MIG_1G, device_ids=["MIG-gpu-1-1-3"]
        )
    ]
    result = snap(
        _mixed_world(pods=[f.pod("a", resource=MIG_1G)], report_kwargs={"assignments": assignments})
    )
    devices = result.nodes[0].gpus[1].mig_devices
    assert [(d.uuid, [h.assignment for h in d.holders]) for d in devices if d.holders] == [
        ("MIG-gpu-1-1-3", ["kubelet"])
    ]
    assert result.nodes[0].gpus[1].held_slots == 1


def test_mps_without_control_daemon_names_the_daemon() -> None:
    state = ts_world(2, mps=True, fail_gt_one=True, allocatable=0)
    result = snap(state)
    assert codes(result) == ["mps-daemon-missing"]
    labelled = ts_world(
        2,
        mps=True,
        fail_gt_one=True,
        allocatable=0,
        node_labels={"nvidia.com/mps.capable": "true"},
    )
    assert "mps-daemon-missing" not in codes(snap(labelled))


def test_split_node_daemonset_owns_its_node_and_the_shared_one_the_rest() -> None:
    """DESIGN's host split: gpu-2 gets its own DaemonSet pinned to it with its UUIDs."""
    uuids = f"{f.gpu_uuid('gpu-2', 0)},{f.gpu_uuid('gpu-2', 1)}"
    pinned = f.plugin_daemonset(
        name="nvidia-device-plugin-gpu-2", env={"NVIDIA_VISIBLE_DEVICES": uuids}
    )
    pinned["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-2"}
    shared = f.plugin_daemonset()
    shared["spec"]["template"]["spec"]["nodeSelector"] = {"gpu-split": "false"}
    nodes = [
        f.node("gpu-1", allocatable=4, labels={"gpu-split": "false"}),
        f.node("gpu-2", allocatable=2),
        f.node("gpu-3", allocatable=4, labels={"gpu-split": "false"}),
    ]
    plugin_pods = [
        f.plugin_pod("gpu-1"),
        f.plugin_pod("gpu-2", daemonset="nvidia-device-plugin-gpu-2"),
        f.plugin_pod("gpu-3"),
    ]
    result = snap(
        world(
            daemonset=shared,
            daemonsets=[pinned],
            nodes=nodes,
            plugin_pods=plugin_pods,
            reports=[f.report(n) for n in ("gpu-1", "gpu-2", "gpu-3")],
        )
    )
    assert [(n.name, n.visible_gpus, n.host_gpus, n.expected_slots) for n in result.nodes] == [
        ("gpu-1", 4, 0, 4),
        ("gpu-2", 2, 2, 2),
        ("gpu-3", 4, 0, 4),
    ]
    assert result.mode == "basic"
    assert codes(result) == []
