"""The cache's slim pods (app/kube/slim.py) give the same snapshot as whole manifests."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from app.domain.accounting.engine import build_snapshot
from app.domain.cluster import AccountingOptions, ClusterState
from app.kube.slim import slim_pod
from app.simulator.cluster import SimulatedCluster
from app.simulator.resources import (
    CONFIGMAP,
    DAEMONSET,
    DEVICECLASS,
    NODE,
    POD,
    RESOURCECLAIM,
    RESOURCESLICE,
)
from app.simulator.scenario import BUILTIN_SCENARIOS
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


def same_snapshot(state: ClusterState) -> tuple[int, int]:
    """Builds from whole and from slim pods are equal; (bytes whole, bytes slim) as JSON."""
    whole = [with_server_bookkeeping(pod) for pod in state.pods]
    slim = [slim_pod(copy.deepcopy(pod)) for pod in whole]
    options = AccountingOptions()
    expected = build_snapshot(replace(state, pods=whole), options=options, now=NOW)
    found = build_snapshot(replace(state, pods=slim), options=options, now=NOW)
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


def test_plugin_pods_are_kept_whole_and_workload_pods_lose_only_unread_parts() -> None:
    workload = with_server_bookkeeping(
        {
            "metadata": {
                "name": "train-0",
                "namespace": "ml",
                "uid": "u1",
                "annotations": {"a": "b"},
            },
            "spec": {
                "nodeName": "gpu-1",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                "containers": [
                    {
                        "name": "train",
                        "image": "pytorch:24.10",
                        "command": ["python"],
                        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
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
                    }
                ],
            },
        }
    )
    plugin = copy.deepcopy(workload)
    plugin["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvidia-device-plugin"}]

    slim = slim_pod(workload)

    assert slim == {
        "metadata": {"name": "train-0", "namespace": "ml", "uid": "u1", "annotations": {"a": "b"}},
        "spec": {
            "nodeName": "gpu-1",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "containers": [
                {
                    "name": "train",
                    "image": "pytorch:24.10",
                    "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-12-02T10:00:00Z",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    assert slim_pod(copy.deepcopy(plugin)) == plugin
