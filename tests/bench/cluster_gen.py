"""The benchmark's cluster: N GPU nodes of 8 GPUs, 30 pods per node, agent reports.

Per node: 8 pods holding one `nvidia.com/gpu` slot each (one per GPU, so 8,000 of 30,000 pods
at 1,000 nodes), 21 CPU-only pods, and the device-plugin pod the simulator creates. Every
50th node also runs a host process on GPU 7, so the snapshot carries findings as a real
cluster's would. The scenario is built in memory (a YAML file of 30,000 pods takes PyYAML
minutes to parse), and served by `tests.bench.simserver` in its own process.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from app.simulator.node.inventory import NodeInventory, SimGpu
from app.simulator.world.scenario import Scenario, gpu_uuid, node_object

GPUS_PER_NODE = 8
GPU_PODS_PER_NODE = 8
CPU_PODS_PER_NODE = 21  # + 8 GPU pods + 1 plugin pod = 30 pods per node
PODS_PER_NODE = GPU_PODS_PER_NODE + CPU_PODS_PER_NODE + 1
NAMESPACES = 20
HOST_PROCESS_EVERY = 50
GPU_MODEL = "NVIDIA H100 80GB HBM3"
GPU_MEMORY_MIB = 81559
STARTED_AT = "2025-01-06T08:00:00Z"


def node_name(index: int) -> str:
    return f"gpu-{index:04d}"


def namespace_of(index: int) -> str:
    return f"team-{index % NAMESPACES:02d}"


def gpu_pod_name(node: int, slot: int) -> str:
    return f"train-{node:04d}-{slot}"


def plugin_daemonset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/name": "nvidia-device-plugin"},
        },
        "spec": {
            "selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
            "template": {
                "metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
                "spec": {
                    "runtimeClassName": "nvidia",
                    "nodeSelector": {"nvidia.com/gpu.present": "true"},
                    "priorityClassName": "system-node-critical",
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
                            "env": [{"name": "FAIL_ON_INIT_ERROR", "value": "false"}],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                },
            },
        },
    }


def _status(node: int, pod: int, containers: list[str]) -> dict[str, Any]:
    def condition(kind: str) -> dict[str, str]:
        return {"type": kind, "status": "True", "lastTransitionTime": STARTED_AT}

    return {
        "phase": "Running",
        "conditions": [
            condition(kind)
            for kind in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ],
        "hostIP": f"10.{node // 250}.{node % 250}.1",
        "podIP": f"10.{64 + node // 250}.{node % 250}.{2 + pod}",
        "startTime": STARTED_AT,
        "qosClass": "Burstable",
        "containerStatuses": [
            {
                "name": name,
                "image": "registry.local/ml/pytorch:24.10",
                "imageID": "registry.local/ml/pytorch@sha256:" + "0" * 64,
                "containerID": f"containerd://{node:08x}{pod:04x}{'0' * 52}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": STARTED_AT}},
            }
            for name in containers
        ],
    }


def pod_manifest(node: int, pod: int) -> dict[str, Any]:
    """Pod `pod` (0-28) of node `node`: 0-7 hold one GPU slot, the rest only CPU."""
    gpu = pod < GPU_PODS_PER_NODE
    name = gpu_pod_name(node, pod) if gpu else f"svc-{node:04d}-{pod}"
    resources: dict[str, Any] = {
        "requests": {"cpu": "4" if gpu else "250m", "memory": "32Gi" if gpu else "512Mi"},
        "limits": {"memory": "64Gi" if gpu else "1Gi"},
    }
    if gpu:
        resources["limits"]["nvidia.com/gpu"] = "1"
    container = "trainer" if gpu else "app"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace_of(node * PODS_PER_NODE + pod),
            "labels": {"app": "train" if gpu else "svc", "node-index": str(node)},
        },
        "spec": {
            "nodeName": node_name(node),
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": container,
                    "image": "registry.local/ml/pytorch:24.10",
                    "command": ["python", "train.py" if gpu else "serve.py"],
                    "resources": resources,
                }
            ],
        },
        "status": _status(node, pod, [container]),
    }


def scenario(nodes: int) -> Scenario:
    """The benchmark cluster of `nodes` GPU nodes as a simulator scenario."""
    built = Scenario(name=f"bench-{nodes}", description=f"benchmark: {nodes} GPU nodes")
    for index in range(nodes):
        name = node_name(index)
        inventory = NodeInventory(
            node=name,
            gpus=tuple(
                SimGpu(
                    index=g,
                    uuid=gpu_uuid(name, g),
                    name=GPU_MODEL,
                    memory_total_mib=GPU_MEMORY_MIB,
                )
                for g in range(GPUS_PER_NODE)
            ),
        )
        built.inventories.append(inventory)
        spec = {"name": name, "labels": {"nvidia.com/gpu.present": "true"}}
        built.node_objects.append(node_object(spec, inventory, index=index))
    built.objects.append(plugin_daemonset())
    for index in range(nodes):
        for pod in range(GPU_PODS_PER_NODE + CPU_PODS_PER_NODE):
            built.objects.append(pod_manifest(index, pod))
    return built


def iter_reports(
    nodes: int, uids: Mapping[tuple[str, str], str], *, collected_at: datetime
) -> Iterator[dict[str, Any]]:
    """One schema-1 agent report body per node (pod processes carry the pods' UIDs)."""
    for index in range(nodes):
        yield report_body(index, uids, collected_at=collected_at)


def report_body(
    index: int,
    uids: Mapping[tuple[str, str], str],
    *,
    collected_at: datetime,
    extra_mib: int = 0,
) -> dict[str, Any]:
    name = node_name(index)
    gpus = []
    for g in range(GPUS_PER_NODE):
        pod = gpu_pod_name(index, g)
        uid = uids.get((namespace_of(index * PODS_PER_NODE + g), pod))
        processes: list[dict[str, Any]] = [
            {
                "pid": 10_000 + g,
                "used_memory_mib": 30_000 + extra_mib,
                "pod_uid": uid,
                "container": f"{index:08x}{g:04x}{'0' * 52}",
                "command": "python train.py",
                "user": None,
            }
        ]
        if g == GPUS_PER_NODE - 1 and index % HOST_PROCESS_EVERY == 0:
            processes.append(
                {
                    "pid": 40_000,
                    "used_memory_mib": 20_000,
                    "pod_uid": None,
                    "container": None,
                    "command": "python sweep.py --trial 17",
                    "user": "alice",
                }
            )
        used = 4 + sum(int(p["used_memory_mib"]) for p in processes)
        gpus.append(
            {
                "index": g,
                "uuid": gpu_uuid(name, g),
                "name": GPU_MODEL,
                "memory_total_mib": GPU_MEMORY_MIB,
                "memory_used_mib": min(used, GPU_MEMORY_MIB),
                "utilization_pct": 90,
                "processes": processes,
            }
        )
    return {
        "schema": 1,
        "node": name,
        "collected_at": collected_at.astimezone(UTC).isoformat(),
        "source": "nvml",
        "driver_version": "550.127.05",
        "gpus": gpus,
        "agent_version": "bench",
    }
