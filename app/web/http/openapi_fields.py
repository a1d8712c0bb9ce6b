# ruff: noqa: E501  (one field per line reads better than split strings)
"""Descriptions of the read API's fields that their models do not carry themselves.

The snapshot's models are the domain's (app/domain/snapshot.py) and the report's are shared
with the agent (app/domain/report.py); their own `Field(description=...)` wins, and these
fill in the rest when /openapi.json is built (app/web/http/openapi_docs.py). A test fails
when a field has no description, or when an entry here names a field that no longer exists.
"""

from __future__ import annotations

READ_FIELDS: dict[str, dict[str, str]] = {
    "AgentState": {
        "collected_at": "When the agent took the readings (UTC, the node's clock)",
        "received_at": "When the dashboard received the report (UTC)",
        "age_s": (
            "Seconds since received_at, in whole seconds, reckoned at most 5 s (the refresh "
            "interval) before the snapshot's time and again whenever an agent turns stale"
        ),
        "fresh": "False once the report is older than GEO_MLOPS_AGENT_STALE_AFTER_S",
        "source": "The reader that produced the GPUs: nvml | nvidia-smi | none",
        "driver_version": "NVIDIA driver version the agent read; null when unknown",
        "error": "Why the agent could read no GPU (source none); null otherwise",
    },
    "Totals": {
        "physical_gpus": "GPUs the agents report, over all nodes",
        "visible_gpus": "GPUs the device plugins see",
        "host_gpus": "GPUs deliberately kept out of Kubernetes for host processes",
        "failing_gpus": "GPUs not advertised because their node's plugin pod fails",
        "allocatable": "Slots advertised (status.allocatable of the main resource), summed",
        "requested": "Slots held by pods, summed",
        "free": "Schedulable free slots, summed (never negative per node)",
    },
    "PendingDemand": {
        "resource": "The GPU resource the pods ask for, e.g. nvidia.com/gpu",
        "pods": "Unscheduled pods asking for it",
        "slots": "Slots those pods ask for, together",
        "oldest_s": "Seconds the oldest of them has waited",
        "reason": (
            "Why they cannot fit now, a code: not-advertised (no node advertises the resource), "
            "refused-above-one (the plugin refuses requests above 1), too-large (the largest "
            "schedulable free of one node is below the smallest request), fits (waits on the "
            "scheduler)"
        ),
        "smallest": "The smallest request among them",
        "largest": "The largest schedulable free slot count of one advertising node",
    },
    "PluginState": {
        "name": "Name of the device-plugin DaemonSet",
        "namespace": "Its namespace",
        "found": "False when the DaemonSet does not exist",
        "image": "The plugin container's image; null when not found",
        "version": "The image tag read as a version, e.g. v0.17.1; null when unknown",
        "ready": "Plugin pods ready (status.numberReady)",
        "desired": "Plugin pods the DaemonSet should run (status.desiredNumberScheduled)",
        "operator_managed": "True when the GPU Operator owns the DaemonSet (read-only here)",
        "mode": "Sharing mode of the cluster-wide config: basic | time-slicing | mps | unknown",
        "replicas": "Slots per GPU (time-slicing / MPS replicas; 1 in basic mode)",
        "resource": "The resource pods request, e.g. nvidia.com/gpu or nvidia.com/gpu.shared",
        "rename_by_default": "The config's renameByDefault: shared GPUs advertised as <resource>.shared",
        "fail_requests_greater_than_one": "The config's failRequestsGreaterThanOne: the plugin refuses pods asking for 2+ shared slots",
    },
    "PluginPod": {
        "name": "The pod's name",
        "phase": "status.phase: Pending | Running | Succeeded | Failed | Unknown",
        "ready": "The pod's Ready condition",
        "started_at": "status.startTime (UTC); null before it started",
        "image": "The plugin container's image",
        "restarts": "Restarts of the plugin container",
    },
    "PodSlots": {
        "uid": "The pod's metadata.uid",
        "phase": "status.phase",
        "slots": "Slots the pod holds (as the scheduler counts its requests)",
        "resource": "The resource it holds them of",
    },
    "NodeConfig": {
        "managed_by": "Who installed the DaemonSet: gpu-operator | helm | other",
        "configmap": "namespace/name of the ConfigMap the config comes from; null: none",
        "key": "The key of that ConfigMap the plugin reads",
        "mig_strategy": "The config's migStrategy: none | single | mixed",
    },
    "NodeState": {
        "name": "The node's name",
        "ready": "The node's Ready condition",
        "gpu_node": "True when the node has NVIDIA GPUs (labels, capacity or an agent report)",
        "k3s": "True on k3s (its containerd needs runtimeClassName: nvidia)",
        "mode": "Sharing mode of this node's config: basic | time-slicing | mps | unknown",
        "resource": "The node's main GPU resource, e.g. nvidia.com/gpu",
        "replicas": "Slots per GPU on this node",
        "expected_slots": "Slots the config and the visible GPUs should give (visible x replicas); null when unknown",
        "capacity": "status.capacity of the main resource; null when absent",
        "allocatable": "status.allocatable of the main resource; null when absent",
        "requested": "Slots of the main resource held by pods bound to the node",
        "free": "Schedulable free slots (never negative, 0 when unschedulable); null without allocatable",
        "plugin_pod": "The node's device-plugin pod; null when none runs there",
        "agent": "The newest agent report; null when the node never reported",
        "gpus": "Every GPU the agent reports, in index order",
        "pods": "Pods on the node that hold GPU slots",
        "findings": "The node's findings (node, GPU and pod scope), worst first",
        "schedulable": "False when NotReady, cordoned or tainted against GPU pods",
        "config": "Where the node's plugin config comes from; null without a plugin DaemonSet",
    },
    "GpuState": {
        "index": "NVML index (nvidia-smi: index)",
        "uuid": "GPU UUID, GPU-...",
        "name": "Product name, e.g. NVIDIA A100-SXM4-80GB",
        "held_slots": "Slots of this GPU held by pods",
        "holders": "Who holds its slots, and how that is known",
        "memory_total_mib": "memory.total in MiB; null where Not Supported",
        "memory_used_mib": "memory.used in MiB; null where Not Supported",
        "memory_pods_mib": "Memory of processes attributed to pods, in MiB",
        "memory_host_mib": "Memory of the other processes (host, or not seen), in MiB",
        "utilization_pct": "utilization.gpu in percent; null on MIG-enabled GPUs",
        "mig_mode": "enabled | disabled; null where the GPU has no MIG",
        "processes": "Compute processes on the GPU, with their owners",
        "finding_codes": "Codes of the findings about this GPU",
        "worst_severity": "The worst severity among them; null when none",
        "mig_devices": "The GPU's MIG devices, under a MIG strategy",
    },
    "MigDeviceState": {
        "uuid": "MIG device UUID, MIG-...",
        "profile": "MIG profile, e.g. 1g.10gb",
        "held_slots": "Slots of the device held by pods",
        "holders": "Who holds them",
        "memory_total_mib": "Memory of the device in MiB",
        "memory_used_mib": "Memory used on it in MiB",
        "processes": "Compute processes on the device",
    },
    "GpuProcess": {
        "pid": "Host PID",
        "used_memory_mib": "GPU memory of the process in MiB; null when unknown",
        "owner": "pod: a pod's container; host: outside Kubernetes; unknown: the agent could not see it",
        "pod_uid": "The pod's UID, when the owner is a pod",
        "container": "Container ID from the process's cgroup",
        "command": "Command line",
        "user": "User name of a host process",
    },
    "SlotHolder": {"slots": "Slots it holds of this GPU or MIG device"},
    "Finding": {
        "severity": "error | warning | info",
        "scope": "cluster | node | gpu | pod",
        "node": "The node it is about; null for a cluster-wide finding",
        "gpu_uuid": "The GPU it is about, when one",
    },
    "DraDeviceState": {
        "driver": "The DRA driver publishing the device, e.g. gpu.nvidia.com",
        "pool": "The ResourceSlice pool (usually the node's name)",
        "uuid": "The GPU or MIG UUID the driver gives the device; null when it gives none",
        "product_name": "The device's product name attribute",
    },
    "DraInstall": {"managed_by": "Who installed the driver: gpu-operator | helm | other"},
    "DeviceAssignment": {
        "namespace": "The pod's namespace",
        "pod": "The pod's name",
        "container": "The container the devices were assigned to",
    },
    "DraAssignment": {
        "namespace": "The pod's namespace",
        "pod": "The pod's name",
        "container": "The container the device was prepared for",
        "claim_namespace": "The ResourceClaim's namespace",
        "pool": "The ResourceSlice pool of the device",
    },
    "GpuReading": {"processes": "Compute processes on the GPU (at most 4096)"},
    "MigDeviceReading": {"processes": "Compute processes on the MIG device (at most 4096)"},
    "AgentReport": {
        "driver_version": "NVIDIA driver version",
        "gpus": "Every GPU the agent could read (at most 64)",
        "agent_version": "The agent's own version",
    },
}
