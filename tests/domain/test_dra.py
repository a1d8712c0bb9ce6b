"""DRA in the ledger: each allocation shape as the API shows it, with literal values."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.domain.cluster import ClusterState
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo
from app.domain.report import DraAssignment
from app.domain.snapshot import NodeState, Snapshot
from app.web.views.finding_text import finding_title
from tests import factories as f
from tests.domain.dra_worlds import (
    auto_pod,
    claim,
    claim_pod,
    device_class,
    dra_readings,
    dra_world,
    gpu_device,
    mig_device,
    pod_proc,
    resource_slice,
)
from tests.domain.worlds import snap

EXCLUSIVE = {
    "strategy": "Exclusive",
    "configured": False,
    "interval": None,
    "active_thread_pct": None,
    "pinned_memory_limit": None,
}


def _node(snapshot: Snapshot, name: str = "dra-1") -> NodeState:
    return next(n for n in snapshot.nodes if n.name == name)


def _holders(snapshot: Snapshot, index: int) -> list[dict[str, Any]]:
    return [h.model_dump() for h in _node(snapshot).gpus[index].holders]


def _codes(snapshot: Snapshot) -> list[tuple[str, str | None, str | None]]:
    return sorted((x.code, x.node, x.gpu_uuid) for x in snapshot.findings)


def test_dra_exclusive_claim_is_one_holder_with_its_claim_and_no_sharing() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c1", devices=["gpu-0"], reserved=["a"])],
            pods=[claim_pod("a", "c1")],
            readings=dra_readings({0: [pod_proc("a")]}),
        )
    )
    node = _node(snapshot)
    assert node.allocation == "dra"
    assert _node(snapshot, "gpu-1").allocation == "device-plugin"
    assert [g.role for g in node.gpus] == ["dra", "dra", "dra", "dra"]
    assert _holders(snapshot, 0) == [
        {
            "pod": "ml/a",
            "slots": 1,
            "assigned": True,
            "assignment": "claim",
            "resource": "gpu.nvidia.com",
            "source": "dra",
            "container": None,
            "replicas": [],
            "claim": "ml/c1",
            "sharing": EXCLUSIVE,
            "device": "gpu-0",
            "share": None,
            "memory_limit_mib": None,
            "gpu_group": None,
        }
    ]
    assert _holders(snapshot, 1) == []
    assert (node.visible_gpus, node.host_gpus, node.expected_slots, node.free) == (0, 0, None, None)
    assert snapshot.dra.model_dump() == {
        "drivers": ["gpu.nvidia.com"],
        "devices": 4,
        "allocated": 1,
        "shared": 0,
        "free": 3,
        "stranded": 0,
        "pending_claims": 0,
        "extended_resources": [],
        "shares": 0,
        "shares_allocated": 0,
        "install": None,
    }
    # Device-plugin totals stay the plugin node's alone: 4 slots, nothing added from DRA.
    assert (snapshot.totals.allocatable, snapshot.totals.free) == (4, 4)
    assert snapshot.findings == []


def test_dra_time_sliced_claim_shared_by_two_pods() -> None:
    sharing = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}
    snapshot = snap(
        dra_world(
            claims=[claim("shared", devices=["gpu-1"], reserved=["a", "b"], sharing=sharing)],
            pods=[claim_pod("a", "shared"), claim_pod("b", "shared")],
            readings=dra_readings({1: [pod_proc("a", pid=1), pod_proc("b", pid=2)]}),
        )
    )
    time_sliced = {**EXCLUSIVE, "strategy": "TimeSlicing", "configured": True, "interval": "Long"}
    assert _holders(snapshot, 1) == [
        {
            "pod": "ml/a",
            "slots": 1,
            "assigned": True,
            "assignment": "claim",
            "resource": "gpu.nvidia.com",
            "source": "dra",
            "container": None,
            "replicas": [],
            "claim": "ml/shared",
            "sharing": time_sliced,
            "device": "gpu-1",
            "share": None,
            "memory_limit_mib": None,
            "gpu_group": None,
        },
        {
            "pod": "ml/b",
            "slots": 1,
            "assigned": True,
            "assignment": "claim",
            "resource": "gpu.nvidia.com",
            "source": "dra",
            "container": None,
            "replicas": [],
            "claim": "ml/shared",
            "sharing": time_sliced,
            "device": "gpu-1",
            "share": None,
            "memory_limit_mib": None,
            "gpu_group": None,
        },
    ]
    assert (snapshot.dra.allocated, snapshot.dra.shared, snapshot.dra.free) == (1, 1, 3)


def test_dra_claim_without_config_used_by_two_pods_is_default_time_slicing() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c", devices=["gpu-2"], reserved=["a", "b"])],
            pods=[claim_pod("a", "c"), claim_pod("b", "c")],
            readings=dra_readings({2: [pod_proc("a", pid=1), pod_proc("b", pid=2)]}),
        )
    )
    assert [h["sharing"] for h in _holders(snapshot, 2)] == [
        {**EXCLUSIVE, "strategy": "TimeSlicing", "interval": "Default"}
    ] * 2
    assert snapshot.dra.shared == 1


def test_dra_mps_claim_carries_thread_and_memory_limits() -> None:
    sharing = {
        "strategy": "MPS",
        "mpsConfig": {
            "defaultActiveThreadPercentage": 50,
            "defaultPinnedDeviceMemoryLimit": "10Gi",
        },
    }
    snapshot = snap(
        dra_world(
            claims=[claim("mps", devices=["gpu-3"], reserved=["a"], sharing=sharing)],
            pods=[claim_pod("a", "mps")],
            readings=dra_readings({3: [pod_proc("a")]}),
        )
    )
    assert _holders(snapshot, 3)[0]["sharing"] == {
        "strategy": "MPS",
        "configured": True,
        "interval": None,
        "active_thread_pct": 50,
        "pinned_memory_limit": "10Gi",
    }
    assert snapshot.dra.shared == 1


def test_dra_mig_device_is_held_under_its_parent_gpu() -> None:
    devices = [gpu_device(i) for i in range(3)] + [mig_device(3, start=0), mig_device(3, start=4)]
    snapshot = snap(
        dra_world(
            classes=[device_class(), device_class("mig.nvidia.com", kind="mig")],
            slices=[resource_slice(devices=devices)],
            claims=[
                claim(
                    "slice",
                    device_class_name="mig.nvidia.com",
                    devices=["gpu-3-mig-9-4-4"],
                    reserved=["a"],
                )
            ],
            pods=[claim_pod("a", "slice")],
            readings=dra_readings({3: [pod_proc("a")]}, mig=[3]),
        )
    )
    gpu = _node(snapshot).gpus[3]
    assert gpu.role == "dra"
    assert [(h.pod, h.claim, h.device) for h in gpu.holders] == [
        ("ml/a", "ml/slice", "gpu-3-mig-9-4-4")
    ]
    assert [(d.name, d.type, d.profile, d.memory_mib, d.claims) for d in gpu.dra_devices] == [
        ("gpu-3-mig-9-0-4", "mig", "3g.40gb", 40192, []),
        ("gpu-3-mig-9-4-4", "mig", "3g.40gb", 40192, ["ml/slice"]),
    ]
    assert [d.parent_uuid for d in gpu.dra_devices] == ["GPU-dra-1-3", "GPU-dra-1-3"]
    assert (snapshot.dra.devices, snapshot.dra.allocated, snapshot.dra.free) == (5, 1, 4)
    assert snapshot.findings == []


def test_dra_auto_created_claim_serves_a_plain_gpu_request() -> None:
    snapshot = snap(
        dra_world(
            classes=[device_class(extended="nvidia.com/gpu")],
            claims=[
                claim("w-extended-resources-x7k2p", devices=["gpu-0"], reserved=["w"], auto_for="w")
            ],
            pods=[auto_pod("w", "w-extended-resources-x7k2p")],
            readings=dra_readings({0: [pod_proc("w")]}),
        )
    )
    node = _node(snapshot)
    assert [(h.pod, h.source, h.claim) for h in node.gpus[0].holders] == [
        ("ml/w", "dra", "ml/w-extended-resources-x7k2p")
    ]
    # The nvidia.com/gpu request is served by the claim, not by plugin slots on dra-1.
    assert (node.requested, node.pods) == (0, [])
    assert snapshot.dra.extended_resources == ["nvidia.com/gpu"]
    mapped = [x for x in snapshot.findings if x.code == "dra-extended-resource-mapped"]
    assert [x.evidence for x in mapped] == [
        {
            "resource": "nvidia.com/gpu",
            "device_class": "gpu.nvidia.com",
            "pods_requesting": 1,
            "pods_with_claims": 1,
            "pods_on_plugin_slots": 0,
            "pending_pods": 0,
            "pending_pods_listed": None,
        }
    ]


def test_dra_extended_mapping_lists_the_pending_pods_that_may_become_claims() -> None:
    snapshot = snap(
        dra_world(
            classes=[device_class(extended="nvidia.com/gpu")],
            pods=[auto_pod("q1", None, node=None), auto_pod("q2", None, node=None), f.pod("slot")],
        )
    )
    (mapped,) = [x for x in snapshot.findings if x.code == "dra-extended-resource-mapped"]
    assert mapped.evidence["pending_pods_listed"] == "ml/q1,ml/q2"
    assert (mapped.evidence["pods_requesting"], mapped.evidence["pods_on_plugin_slots"]) == (3, 1)
    assert finding_title(mapped, "en") == (
        "DeviceClass gpu.nvidia.com maps nvidia.com/gpu: 3 pods request it; 0 got a DRA claim, "
        "2 pending may get one"
    )


def test_dra_node_running_the_plugin_too_is_both_and_an_error() -> None:
    snapshot = snap(dra_world(plugin_on_dra=True))
    assert _node(snapshot).allocation == "both"
    (item,) = [x for x in snapshot.findings if x.code == "dra-and-device-plugin-on-node"]
    assert (item.severity.value, item.node) == ("error", "dra-1")
    assert item.evidence == {
        "dra_drivers": "gpu.nvidia.com",
        "dra_devices": 4,
        "plugin_pod": "nvidia-device-plugin-daemonset-dra-1",
        "plugin_capacity": 4,
    }


def test_dra_unsatisfiable_claim_says_why() -> None:
    snapshot = snap(
        dra_world(
            claims=[
                claim("big", count=5),
                claim("ghost", device_class_name="tpu.example.com"),
                claim("taken", devices=["gpu-0", "gpu-1", "gpu-2", "gpu-3"], reserved=["a"]),
                claim("late"),
            ],
            pods=[claim_pod("a", "taken"), claim_pod("b", "late", node=None, phase="Pending")],
            readings=dra_readings({i: [pod_proc("a", pid=i + 1)] for i in range(4)}),
        )
    )
    reasons = {
        x.evidence["claim"]: (x.evidence["reason"], x.pod, finding_title(x, "en").split(": ")[1])
        for x in snapshot.findings
        if x.code == "dra-claim-unsatisfiable"
    }
    assert reasons == {
        "ml/big": (
            "too-large",
            None,
            "asks for 5 devices of class gpu.nvidia.com; the largest node has 4",
        ),
        "ml/ghost": ("class-missing", None, "DeviceClass tpu.example.com does not exist"),
        "ml/late": (
            "all-allocated",
            "ml/b",
            "all 4 devices of class gpu.nvidia.com are allocated",
        ),
    }
    assert snapshot.dra.pending_claims == 2  # big and late ask for GPU classes; ghost does not


def test_dra_claim_on_notready_node_is_an_error_and_its_devices_are_stranded() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c1", devices=["gpu-0"], reserved=["a"])],
            pods=[claim_pod("a", "c1")],
            readings=dra_readings({0: [pod_proc("a")]}),
            dra_ready=False,
        )
    )
    (item,) = [x for x in snapshot.findings if x.code == "dra-claim-on-lost-node"]
    assert (
        finding_title(item, "en")
        == "Claim ml/c1 is allocated on dra-1, which is NotReady: its pods cannot run"
    )
    assert (snapshot.dra.free, snapshot.dra.stranded) == (0, 3)


def test_dra_claim_on_gone_node() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c1", devices=["gpu-0"], reserved=["a"])],
            slices=[],
            dra_node=False,
        )
    )
    (item,) = [x for x in snapshot.findings if x.code == "dra-claim-on-lost-node"]
    assert (item.evidence["node_state"], item.evidence["devices"]) == ("gone", "gpu-0")


def test_dra_host_process_on_claimed_gpu_is_the_same_error_as_on_slots() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c1", devices=["gpu-0"], reserved=["a"])],
            pods=[claim_pod("a", "c1")],
            readings=dra_readings({0: [pod_proc("a"), f.proc(4242, mib=30000)]}),
        )
    )
    (item,) = [x for x in snapshot.findings if x.code == "host-process-on-advertised-gpu"]
    assert (
        finding_title(item, "en")
        == "Host process 4242 uses GPU 0 on dra-1, which DRA claim ml/c1 holds"
    )
    assert (item.severity.value, item.gpu_uuid) == ("error", "GPU-dra-1-0")


def test_dra_pod_process_without_claim_and_on_another_gpu() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c1", devices=["gpu-0"], reserved=["a"])],
            pods=[claim_pod("a", "c1"), claim_pod("rogue", "none")],
            readings=dra_readings(
                {0: [pod_proc("a")], 1: [pod_proc("a", pid=9)], 2: [pod_proc("rogue", pid=7)]}
            ),
        )
    )
    assert _codes(snapshot) == [
        ("pod-process-on-unassigned-gpu", "dra-1", "GPU-dra-1-1"),
        ("pod-process-without-slot", "dra-1", "GPU-dra-1-2"),
    ]
    unassigned = next(x for x in snapshot.findings if x.code == "pod-process-on-unassigned-gpu")
    assert unassigned.evidence["assigned_gpus"] == "GPU-dra-1-0"


def test_dra_shared_claim_near_memory_is_pressure() -> None:
    sharing = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}}
    snapshot = snap(
        dra_world(
            claims=[claim("s", devices=["gpu-0"], reserved=["a", "b"], sharing=sharing)],
            pods=[claim_pod("a", "s"), claim_pod("b", "s")],
            readings=dra_readings(
                {0: [pod_proc("a", pid=1, mib=40000), pod_proc("b", pid=2, mib=36000)]}
            ),
        )
    )
    (item,) = [x for x in snapshot.findings if x.code == "shared-gpu-memory-pressure"]
    assert item.evidence == {
        "memory_pods_mib": 76000,
        "memory_total_mib": 81920,
        "used_pct": 92.8,
        "threshold_pct": 90.0,
        "pods": 2,
        "claims": "ml/s",
        "sharing": "TimeSlicing",
    }


def test_dra_idle_claim_is_info() -> None:
    snapshot = snap(
        dra_world(
            claims=[claim("c1", devices=["gpu-0"], reserved=["a"])], pods=[claim_pod("a", "c1")]
        )
    )
    assert _codes(snapshot) == [("dra-claim-idle", "dra-1", "GPU-dra-1-0")]


def test_dra_outdated_slice_generation_is_ignored() -> None:
    old = resource_slice(devices=[gpu_device(i) for i in range(2)], generation=1)
    old["metadata"]["name"] = "old"
    snapshot = snap(dra_world(slices=[old, resource_slice(generation=2)]))
    assert snapshot.dra.devices == 4


def test_no_dra_objects_keep_every_node_on_the_plugin_and_an_empty_dra_summary() -> None:
    snapshot = snap(
        f.cluster(
            nodes=[f.node("gpu-1", allocatable=4)],
            pods=[f.plugin_pod("gpu-1")],
            daemonset=f.plugin_daemonset(),
            reports=[f.report("gpu-1")],
        )
    )
    assert [n.allocation for n in snapshot.nodes] == ["device-plugin"]
    assert snapshot.dra.model_dump() == {
        "drivers": [],
        "devices": 0,
        "allocated": 0,
        "shared": 0,
        "free": 0,
        "stranded": 0,
        "pending_claims": 0,
        "extended_resources": [],
        "shares": 0,
        "shares_allocated": 0,
        "install": None,
    }


def test_dra_change_recomputes_memoised_nodes_to_the_plain_answer() -> None:
    def versioned(state: ClusterState) -> ClusterState:
        for obj in [*state.nodes, *state.pods, state.daemonset or {"metadata": {}}]:
            obj["metadata"]["resourceVersion"] = "7"
        return state

    memo = EngineMemo()
    before = versioned(dra_world(pods=[claim_pod("a", "c1")]))
    build_snapshot(before, options=f.OPTIONS, now=f.NOW, memo=memo)
    build_snapshot(before, options=f.OPTIONS, now=f.NOW, memo=memo)
    assert memo.reused == 2  # nothing changed: both nodes reused
    after = replace(before, resource_claims=[claim("c1", devices=["gpu-0"], reserved=["a"])])
    with_memo = build_snapshot(after, options=f.OPTIONS, now=f.NOW, memo=memo)
    assert memo.reused == 0
    assert with_memo == build_snapshot(after, options=f.OPTIONS, now=f.NOW)
    assert [h.claim for h in _node(with_memo).gpus[0].holders] == ["ml/c1"]


def test_dra_holder_confirmed_by_the_kubelet_names_its_container() -> None:
    state = dra_world(
        claims=[claim("c1", devices=["gpu-0"], reserved=["a", "b"])],
        pods=[claim_pod("a", "c1"), claim_pod("b", "c1")],
        readings=dra_readings({0: [pod_proc("a", pid=1), pod_proc("b", pid=2)]}),
    )
    received = state.reports["dra-1"]
    listed = DraAssignment(
        namespace="ml",
        pod="a",
        container="trainer",
        claim_namespace="ml",
        claim="c1",
        driver="gpu.nvidia.com",
        pool="dra-1",
        device="gpu-0",
    )
    report = received.report.model_copy(update={"dra_assignments": [listed]})
    reports = {**state.reports, "dra-1": received.model_copy(update={"report": report})}
    snapshot = snap(replace(state, reports=reports))
    assert [(h.pod, h.assignment, h.container) for h in _node(snapshot).gpus[0].holders] == [
        ("ml/a", "kubelet", "trainer"),
        ("ml/b", "claim", None),  # the kubelet does not list it (yet): the claim says so
    ]


def test_dra_only_node_is_not_blamed_for_a_missing_device_plugin() -> None:
    without_dra = replace(dra_world(), device_classes=[], resource_slices=[], resource_claims=[])
    assert ("plugin-missing-on-node", "dra-1", None) in _codes(snap(without_dra))
    assert _codes(snap(dra_world())) == []


def test_dra_consumable_shares_of_one_device_are_listed_per_claim() -> None:
    claims = []
    for name, share, memory in (("s1", "a1b2", "20Gi"), ("s2", "c3d4", "40Gi")):
        item = claim(name, devices=["gpu-0"], reserved=[f"{name}-pod"])
        result = item["status"]["allocation"]["devices"]["results"][0]
        result.update({"shareID": share, "consumedCapacity": {"memory": memory}})
        claims.append(item)
    snapshot = snap(
        dra_world(
            claims=claims,
            pods=[claim_pod("s1-pod", "s1"), claim_pod("s2-pod", "s2")],
            readings=dra_readings({0: [pod_proc("s1-pod", pid=1), pod_proc("s2-pod", pid=2)]}),
        )
    )
    (device,) = _node(snapshot).gpus[0].dra_devices
    assert [s.model_dump() for s in device.shares] == [
        {"claim": "ml/s1", "share_id": "a1b2", "consumed_capacity": {"memory": "20Gi"}},
        {"claim": "ml/s2", "share_id": "c3d4", "consumed_capacity": {"memory": "40Gi"}},
    ]
    assert (snapshot.dra.allocated, snapshot.dra.shared) == (1, 1)  # two claims, one device
