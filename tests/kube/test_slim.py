"""The cache's slim pods (app/kube/slim.py) give the same snapshot as whole manifests."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.engine.build import build_snapshot
from app.kube.slim import PodSlimmer, slim_node, slim_pod
from app.simulator.apiserver.resources import (
    CONFIGMAP,
    DAEMONSET,
    DEVICECLASS,
    NODE,
    POD,
    RESOURCECLAIM,
    RESOURCESLICE,
)
from app.simulator.world.cluster import SimulatedCluster
from app.simulator.world.scenario import BUILTIN_SCENARIOS
from tests.bench.engine_bench import cluster_state

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def with_server_bookkeeping(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod as a real API server sends it: managedFields, last-applied, volumes, probes."""
    pod = copy.deepcopy(pod)
    meta = pod["metadata"]
    meta["managedFields"] = [
        {"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}
    ]
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    pod["spec"]["volumes"] = [{"name": "kube-api-access", "projected": {"sources": []}}]
    for container in pod["spec"]["containers"]:
        container["volumeMounts"] = [{"name": "kube-api-access", "mountPath": "/var/run"}]
        container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 8080}}
    return pod


def node_with_bookkeeping(node: dict[str, Any]) -> dict[str, Any]:
    """A node as a real API server sends it: managedFields, last-applied, pulled images."""
    node = copy.deepcopy(node)
    meta = node["metadata"]
    meta["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    node.setdefault("status", {})["images"] = [
        {"names": ["nvcr.io/nvidia/k8s-device-plugin:v0.18.2"], "sizeBytes": 123456789}
    ]
    return node


def same_snapshot(state: ClusterState) -> tuple[int, int]:
    """Builds from whole and from slim pods and nodes are equal; (bytes whole, bytes slim)."""
    whole = [with_server_bookkeeping(pod) for pod in state.pods]
    slim = [slim_pod(copy.deepcopy(pod)) for pod in whole]
    nodes = [node_with_bookkeeping(node) for node in state.nodes]
    slim_nodes = [slim_node(copy.deepcopy(node)) for node in nodes]
    assert all(
        "images" not in n["status"] and "managedFields" not in n["metadata"] for n in slim_nodes
    )
    options = AccountingOptions()
    expected = build_snapshot(replace(state, pods=whole, nodes=nodes), options=options, now=NOW)
    found = build_snapshot(replace(state, pods=slim, nodes=slim_nodes), options=options, now=NOW)
    assert found.model_dump() == expected.model_dump()
    return len(json.dumps(whole)), len(json.dumps(slim))


def dra_allocated(state: ClusterState) -> int:
    """Devices the snapshot shows allocated to claims (DRA data took part in the build)."""
    return build_snapshot(state, options=AccountingOptions(), now=NOW).dra.allocated


def test_slim_pods_give_the_same_snapshot_on_the_benchmark_cluster() -> None:
    whole, slim = same_snapshot(cluster_state(6))
    assert slim < whole * 0.6  # 30 pods a node, nearly all of them workload


def test_slim_pods_give_the_same_snapshot_on_every_builtin_scenario() -> None:
    with_dra = set()
    for scenario in BUILTIN_SCENARIOS:
        simulator = SimulatedCluster(scenario)
        store = simulator.store
        daemonsets = store.objects(DAEMONSET)
        state = ClusterState(
            daemonset=daemonsets[0] if daemonsets else None,
            configmaps={cm["metadata"]["name"]: cm for cm in store.objects(CONFIGMAP)},
            nodes=store.objects(NODE),
            pods=store.objects(POD),
            reports={},
            device_classes=store.objects(DEVICECLASS),
            resource_slices=store.objects(RESOURCESLICE),
            resource_claims=store.objects(RESOURCECLAIM),
            daemonsets=daemonsets,
        )
        same_snapshot(state)
        if dra_allocated(state):
            with_dra.add(scenario)
    # Pods with DRA fields (spec.resourceClaims, status.resourceClaimStatuses, container
    # resources.claims) were part of the comparison: these scenarios allocate claims.
    assert with_dra == {"demo", "dra"}


def test_plugin_pods_are_kept_whole_and_workload_pods_keep_only_read_parts() -> None:
    workload = with_server_bookkeeping(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "train-0",
                "namespace": "ml",
                "uid": "u1",
                "resourceVersion": "41",
                "annotations": {"a": "b"},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "train",
                        "uid": "j1",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "nodeName": "gpu-1",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                "containers": [
                    {
                        "name": "train",
                        "image": "pytorch:24.10",
                        "command": ["python"],
                        "env": [
                            {"name": "EPOCHS", "value": "3"},
                            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                        ],
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
            },
            "status": {
                "phase": "Running",
                "podIP": "10.0.0.5",
                "startTime": "2026-12-02T10:00:00Z",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": "2026-12-02T10:00:00Z",
                    },
                    {"type": "PodScheduled", "status": "True"},
                ],
                "containerStatuses": [
                    {
                        "name": "train",
                        "image": "pytorch:24.10",
                        "containerID": "containerd://0123",
                        "ready": True,
                        "restartCount": 2,
                        "state": {"running": {"startedAt": "2026-12-02T10:00:00Z"}},
                    }
                ],
            },
        }
    )
    plugin = copy.deepcopy(workload)
    plugin["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvidia-device-plugin"}]

    slim = slim_pod(workload)

    assert slim == {
        "metadata": {
            "name": "train-0",
            "namespace": "ml",
            "uid": "u1",
            "resourceVersion": "41",
            "annotations": {"a": "b"},
            "ownerReferences": [{"kind": "Job", "name": "train", "controller": True}],
        },
        "spec": {
            "nodeName": "gpu-1",
            "containers": [
                {
                    "name": "train",
                    "image": "pytorch:24.10",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                }
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-12-02T10:00:00Z",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "train", "restartCount": 2}],
        },
    }
    assert slim_pod(copy.deepcopy(plugin)) == plugin


def _replica(index: int, node: str) -> dict[str, Any]:
    """A pod of one ReplicaSet, as the API server sends it (each parsed on its own)."""
    text = json.dumps(
        {
            "metadata": {
                "name": f"web-{index}",
                "namespace": "shop",
                "uid": f"uid-{index}",
                "labels": {"app": "web", "pod-template-hash": "5d9f"},
                "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d9f", "uid": "rs1"}],
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "web", "image": "nginx:1.27", "resources": {"limits": {"cpu": "1"}}}
                ],
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "web", "restartCount": 0, "state": {}}],
            },
        }
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_pods_of_one_template_share_their_repeated_parts_until_none_holds_them() -> None:
    slimmer = PodSlimmer()
    first = slimmer(_replica(0, "gpu-1"))
    second = slimmer(_replica(1, "gpu-2"))

    assert second == slim_pod(_replica(1, "gpu-2"))
    for part in (("metadata", "labels"), ("metadata", "ownerReferences"), ("spec", "containers")):
        assert second[part[0]][part[1]] is first[part[0]][part[1]]
    assert second["status"]["containerStatuses"] is first["status"]["containerStatuses"]
    assert second["metadata"]["uid"] == "uid-1" and second["spec"]["nodeName"] == "gpu-2"
    kept = len(slimmer.shared)
    assert kept == 5  # labels, owners, containers, conditions, container statuses

    del first  # one pod deleted from the cache: the other still holds every part
    slimmer.shared.prune()
    assert len(slimmer.shared) == 5
    del second
    slimmer.shared.prune()
    assert len(slimmer.shared) == 0


def test_parts_equal_only_loosely_are_not_shared() -> None:
    slimmer = PodSlimmer()
    text, number, flag = _replica(0, "gpu-1"), _replica(1, "gpu-1"), _replica(2, "gpu-1")
    number["spec"]["containers"][0]["resources"]["limits"]["cpu"] = 1
    number["metadata"]["labels"]["tier"] = 1
    flag["metadata"]["labels"]["tier"] = True
    kept = [slimmer(pod) for pod in (text, number, flag)]

    assert kept[0]["spec"]["containers"] is not kept[1]["spec"]["containers"]
    assert kept[1]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == 1
    assert kept[1]["metadata"]["labels"] is not kept[2]["metadata"]["labels"]
    assert kept[2]["metadata"]["labels"]["tier"] is True
