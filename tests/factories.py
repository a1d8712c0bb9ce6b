"""Builders of Kubernetes manifests, agent reports and cluster states for tests.

Every builder returns plain camelCase dicts (what the cluster cache holds) or the domain's
report models, with defaults that describe a healthy cluster; tests override one thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.report import (
    AgentReport,
    DeviceAssignment,
    GpuReading,
    ProcessReading,
    ReceivedReport,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
PLUGIN_NAME = "nvidia-device-plugin-daemonset"
PLUGIN_NAMESPACE = "kube-system"
CONFIGMAP = "nvidia-device-plugin-config"
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
OPTIONS = AccountingOptions()

Manifest = dict[str, Any]


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_uuid(node_name: str, index: int) -> str:
    """A stable fake UUID per node and index: GPU-<node>-<index>."""
    return f"GPU-{node_name}-{index}"


# --- Nodes ------------------------------------------------------------------------------


def node(
    name: str = "gpu-1",
    *,
    allocatable: int | None = None,
    capacity: int | None = None,
    resource: str = "nvidia.com/gpu",
    extra_resources: Mapping[str, int] | None = None,
    k3s: bool = True,
    ready: bool = True,
    labels: Mapping[str, str] | None = None,
) -> Manifest:
    """A node; `allocatable` of `resource` (capacity defaults to the same number)."""
    if capacity is None:
        capacity = allocatable
    caps: dict[str, str] = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    alloc = dict(caps)
    if capacity is not None:
        caps[resource] = str(capacity)
    if allocatable is not None:
        alloc[resource] = str(allocatable)
    for extra, count in (extra_resources or {}).items():
        caps[extra] = alloc[extra] = str(count)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-node-{name}",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "status": {
            "capacity": caps,
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "nodeInfo": {"kubeletVersion": "v1.30.4+k3s1" if k3s else "v1.30.4"},
        },
    }


# --- Plugin DaemonSet, its pods and ConfigMap ------------------------------------------


def plugin_daemonset(
    *,
    name: str = PLUGIN_NAME,
    namespace: str = PLUGIN_NAMESPACE,
    image: str = IMAGE,
    env: Mapping[str, str] | None = None,
    runtime_class: str | None = "nvidia",
    privileged: bool = False,
    configmap: str | None = None,
    config_file: str | None = None,
    mount_path: str = "/config",
    ready: int = 1,
    desired: int = 1,
    operator: bool = False,
    extra_containers: Sequence[Manifest] = (),
    extra_volumes: Sequence[Manifest] = (),
) -> Manifest:
    """The plugin DaemonSet. `configmap` mounts that ConfigMap at `mount_path`;
    `config_file` sets CONFIG_FILE (e.g. /config/config.yaml)."""
    env_items = [{"name": k, "value": v} for k, v in (env or {}).items()]
    if config_file is not None:
        env_items.append({"name": "CONFIG_FILE", "value": config_file})
    mounts = [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}]
    volumes: list[Manifest] = [
        {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
        *extra_volumes,
    ]
    if configmap is not None:
        mounts.append({"name": "plugin-config", "mountPath": mount_path})
        volumes.append({"name": "plugin-config", "configMap": {"name": configmap}})
    container: Manifest = {
        "name": "nvidia-device-plugin-ctr",
        "image": image,
        "env": env_items,
        "volumeMounts": mounts,
    }
    if privileged:
        container["securityContext"] = {"privileged": True}
    pod_spec: Manifest = {
        "containers": [container, *extra_containers],
        "volumes": volumes,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if runtime_class is not None:
        pod_spec["runtimeClassName"] = runtime_class
    labels = {"name": "nvidia-device-plugin-ds"}
    meta: Manifest = {
        "name": name,
        "namespace": namespace,
        "uid": "uid-ds",
        "labels": dict(labels),
        "generation": 1,
    }
    if operator:
        meta["labels"]["app.kubernetes.io/managed-by"] = "gpu-operator"
        meta["ownerReferences"] = [
            {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"}
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
        "status": {"desiredNumberScheduled": desired, "numberReady": ready},
    }


def configmap(
    data: Mapping[str, str],
    *,
    name: str = CONFIGMAP,
    namespace: str = PLUGIN_NAMESPACE,
    changed_at: datetime | None = None,
) -> Manifest:
    """A ConfigMap; `changed_at` is its last write (managedFields time)."""
    changed = changed_at or NOW - timedelta(days=2)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-cm-{name}",
            "creationTimestamp": iso(NOW - timedelta(days=3)),
            "managedFields": [{"manager": "kubectl", "operation": "Update", "time": iso(changed)}],
        },
        "data": dict(data),
    }


def time_slicing_yaml(
    replicas: int = 4, *, rename: bool = False, fail_gt_one: bool = False, mps: bool = False
) -> str:
    block = "mps" if mps else "timeSlicing"
    return (
        "version: v1\n"
        "sharing:\n"
        f"  {block}:\n"
        f"    renameByDefault: {str(rename).lower()}\n"
        f"    failRequestsGreaterThanOne: {str(fail_gt_one).lower()}\n"
        "    resources:\n"
        "    - name: nvidia.com/gpu\n"
        f"      replicas: {replicas}\n"
    )


def plugin_pod(
    node_name: str,
    *,
    ready: bool = True,
    phase: str = "Running",
    started_at: datetime | None = None,
    image: str = IMAGE,
    waiting_reason: str | None = None,
    annotations: Mapping[str, str] | None = None,
    daemonset: str = PLUGIN_NAME,
    namespace: str = PLUGIN_NAMESPACE,
) -> Manifest:
    started = started_at or NOW - timedelta(days=1)
    state: Manifest = {"waiting": {"reason": waiting_reason}} if waiting_reason else {"running": {}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{daemonset}-{node_name}",
            "namespace": namespace,
            "uid": f"uid-plugin-{node_name}",
            "creationTimestamp": iso(started),
            "labels": {"name": "nvidia-device-plugin-ds"},
            "annotations": dict(annotations or {}),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": daemonset}],
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "nvidia-device-plugin-ctr", "image": image}],
        },
        "status": {
            "phase": phase,
            "startTime": iso(started),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "nvidia-device-plugin-ctr", "state": state}],
        },
    }


# --- Workload pods -----------------------------------------------------------------------


def container(
    name: str = "main",
    *,
    gpus: int = 0,
    resource: str = "nvidia.com/gpu",
    limits_only: bool = True,
    env: Mapping[str, str] | None = None,
    restart_policy: str | None = None,
) -> Manifest:
    """A container asking for `gpus` of `resource` (in limits; also requests unless limits_only)."""
    spec: Manifest = {"name": name, "image": "busybox"}
    if gpus:
        spec["resources"] = {"limits": {resource: str(gpus)}}
        if not limits_only:
            spec["resources"]["requests"] = {resource: str(gpus)}
    if env:
        spec["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


def pod(
    name: str,
    *,
    node: str | None = "gpu-1",
    gpus: int = 1,
    resource: str = "nvidia.com/gpu",
    namespace: str = "ml",
    phase: str = "Running",
    uid: str | None = None,
    containers: Sequence[Manifest] | None = None,
    init_containers: Sequence[Manifest] = (),
    overhead: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    owner_kind: str | None = "ReplicaSet",
    reason: str | None = None,
) -> Manifest:
    """A workload pod; by default one container asking for `gpus` slots of `resource`."""
    if containers is None:
        containers = [container(gpus=gpus, resource=resource, env=env)]
    spec: Manifest = {"containers": list(containers)}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if node is not None:
        spec["nodeName"] = node
    if overhead:
        spec["overhead"] = dict(overhead)
    meta: Manifest = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "creationTimestamp": iso(NOW - timedelta(hours=1)),
    }
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": f"{name}-owner"}]
    status: Manifest = {"phase": phase}
    if reason:
        status["reason"] = reason
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


KAI_RESERVATION_NS = "kai-resource-reservation"


def fraction_pod(
    name: str,
    *,
    annotations: Mapping[str, str],
    group: str | None = None,
    node: str | None = "gpu-1",
    namespace: str = "ml",
) -> Manifest:
    """A KAI / Run:ai GPU-fraction pod: no nvidia.com/ request, its share in `annotations`."""
    manifest = pod(
        name, node=node, namespace=namespace, containers=[{"name": "main", "image": "vllm"}]
    )
    manifest["metadata"]["annotations"] = dict(annotations)
    if group is not None:
        manifest["metadata"]["labels"] = {"runai-gpu-group": group}
    return manifest


def reservation_pod(
    group: str, gpu_uuid_: str, *, node: str = "gpu-1", name: str | None = None
) -> Manifest:
    """KAI's reservation pod of a GPU group: one nvidia.com/gpu, the GPU UUID annotated."""
    manifest = pod(
        name or f"gpu-reservation-{node}-{group}",
        node=node,
        namespace=KAI_RESERVATION_NS,
        owner_kind=None,
    )
    manifest["metadata"]["labels"] = {"runai-gpu-group": group}
    manifest["metadata"]["annotations"] = {"run.ai/reserve_for_gpu_index": gpu_uuid_}
    return manifest


# --- Agent reports -------------------------------------------------------------------------


def proc(
    pid: int,
    *,
    mib: int | None = 1000,
    pod_uid: str | None = None,
    command: str | None = "python train.py",
    user: str | None = None,
    visible: bool = True,
) -> ProcessReading:
    return ProcessReading(
        pid=pid,
        used_memory_mib=mib,
        pod_uid=pod_uid,
        command=command,
        user=user if user is not None else (None if pod_uid else "alice"),
        visible=visible,
    )


def gpu(
    index: int,
    *,
    node_name: str = "gpu-1",
    uuid: str | None = None,
    name: str = "NVIDIA A100-SXM4-80GB",
    memory_total_mib: int | None = 81920,
    memory_used_mib: int | None = None,
    processes: Iterable[ProcessReading] = (),
    mig_mode: str | None = "disabled",
) -> GpuReading:
    """A GPU reading; memory used defaults to the sum of its processes."""
    procs = list(processes)
    if memory_used_mib is None and memory_total_mib is not None:
        memory_used_mib = sum(p.used_memory_mib or 0 for p in procs)
    return GpuReading(
        index=index,
        uuid=uuid or gpu_uuid(node_name, index),
        name=name,
        memory_total_mib=memory_total_mib,
        memory_used_mib=memory_used_mib,
        utilization_pct=0,
        mig_mode=mig_mode,  # type: ignore[arg-type]
        processes=procs,
    )


def gpus(count: int, *, node_name: str = "gpu-1", **kwargs: Any) -> list[GpuReading]:
    return [gpu(i, node_name=node_name, **kwargs) for i in range(count)]


def assignment(
    pod_name: str,
    device_ids: Sequence[str],
    *,
    namespace: str = "ml",
    resource: str = "nvidia.com/gpu",
) -> DeviceAssignment:
    return DeviceAssignment(
        namespace=namespace,
        pod=pod_name,
        container="main",
        resource=resource,
        device_ids=list(device_ids),
    )


def report(
    node_name: str = "gpu-1",
    readings: Sequence[GpuReading] | None = None,
    *,
    received_at: datetime | None = None,
    assignments: Sequence[DeviceAssignment] | None = None,
    source: str = "nvml",
    error: str | None = None,
) -> ReceivedReport:
    """A received agent report of `node_name` (4 idle GPUs unless `readings` says otherwise)."""
    received = received_at or NOW - timedelta(seconds=10)
    body = AgentReport(
        schema=1,
        node=node_name,
        collected_at=received - timedelta(seconds=1),
        source=source,  # type: ignore[arg-type]
        driver_version="550.127.05",
        error=error,
        gpus=list(readings) if readings is not None else gpus(4, node_name=node_name),
        assignments=list(assignments) if assignments is not None else None,
    )
    return ReceivedReport(report=body, received_at=received)


# --- Whole clusters --------------------------------------------------------------------------


def cluster(
    *,
    daemonset: Manifest | None = None,
    configmaps: Sequence[Manifest] = (),
    nodes: Sequence[Manifest] = (),
    pods: Sequence[Manifest] = (),
    reports: Sequence[ReceivedReport] = (),
    daemonsets: Sequence[Manifest] = (),
) -> ClusterState:
    """ConfigMaps of the plugin namespace by name, others by namespace/name (as the cache)."""
    return ClusterState(
        daemonset=daemonset,
        configmaps={_cm_key(c): c for c in configmaps},
        nodes=list(nodes),
        pods=list(pods),
        reports={r.report.node: r for r in reports},
        daemonsets=list(daemonsets),
    )


def _cm_key(configmap: Manifest) -> str:
    meta = configmap["metadata"]
    namespace = meta.get("namespace", PLUGIN_NAMESPACE)
    return meta["name"] if namespace == PLUGIN_NAMESPACE else f"{namespace}/{meta['name']}"


def host_split_uuids(node_name: str = "gpu-1") -> str:
    """NVIDIA_VISIBLE_DEVICES giving GPUs 0 and 1 to Kubernetes, keeping 2 and 3 for the host."""
    return f"{gpu_uuid(node_name, 0)},{gpu_uuid(node_name, 1)}"
