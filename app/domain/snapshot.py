"""The snapshot: what the accounting engine concludes about the cluster at one moment.

These models are the engine's output and, serialised as they are, the JSON API's node and
GPU shapes; pages read them too, so nothing from the Kubernetes client or NVML leaks past.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field

from app.domain.dra_models import EMPTY_SUMMARY, Allocation, DraDeviceState, DraSummary
from app.domain.finding_model import SEVERITY_RANK as SEVERITY_RANK
from app.domain.finding_model import EvidenceValue as EvidenceValue
from app.domain.finding_model import Finding as Finding
from app.domain.finding_model import Frozen as _Out
from app.domain.finding_model import Scope as Scope
from app.domain.finding_model import Severity as Severity
from app.domain.gpu_model import GpuProcess as GpuProcess
from app.domain.gpu_model import GpuState as GpuState
from app.domain.gpu_model import MigDeviceState as MigDeviceState
from app.domain.gpu_model import SlotHolder as SlotHolder


class Mode(StrEnum):
    BASIC = "basic"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    UNKNOWN = "unknown"


class ResourceState(_Out):
    """One extended resource on a node or in the cluster."""

    allocatable: int
    """status.allocatable (0 when absent)"""
    requested: int
    """Held by pods bound to the node"""
    free: int
    """Schedulable free: never negative, 0 on unschedulable nodes"""
    stranded: int
    """Free but on a node no new pod can be scheduled on"""


class AgentState(_Out):
    """The newest agent report of a node and how old it is."""

    collected_at: datetime
    """When the agent took the readings (UTC, the node's clock)"""
    received_at: datetime
    """When the dashboard received the report (UTC)"""
    age_s: float
    """Seconds since received_at, in whole seconds, reckoned at most 5 s (the refresh interval)
    before the snapshot's time and again whenever an agent turns stale"""
    fresh: bool
    """False once the report is older than GEO_MLOPS_AGENT_STALE_AFTER_S"""
    source: str
    """The reader that produced the GPUs: nvml | nvidia-smi | none"""
    driver_version: str | None
    """NVIDIA driver version the agent read; null when unknown"""
    error: str | None
    """Why the agent could read no GPU (source none); null otherwise"""


class PluginPod(_Out):
    """A device-plugin pod on a node."""

    name: str
    """The pod's name"""
    phase: str
    """status.phase: Pending | Running | Succeeded | Failed | Unknown"""
    ready: bool
    """The pod's Ready condition"""
    started_at: datetime | None
    """status.startTime (UTC); null before it started"""
    image: str | None
    """The plugin container's image"""
    state: str | None = None
    """The container's waiting/terminated reason (CrashLoopBackOff, ContainerCreating, ...) or
    Running; what `kubectl get pods` shows as STATUS"""
    restarts: int = 0
    """Restarts of the plugin container"""


class PodSlots(_Out):
    """A pod on a node that holds GPU slots."""

    pod: str
    """namespace/name"""
    uid: str
    """The pod's metadata.uid"""
    phase: str
    """status.phase"""
    slots: int
    """Slots the pod holds (as the scheduler counts its requests)"""
    resource: str
    """The resource it holds them of"""
    share: float | None = None
    """GPU fraction pods (slots 0, resource the annotation): the share of one GPU they hold, summed
    over the GPUs it is seen on; null when not known"""


class NodeTaint(_Out):
    """A taint of a node (spec.taints[]): pods that do not tolerate it are kept off."""

    key: str
    """The taint's key"""
    value: str | None = None
    """The taint's value; null when none"""
    effect: str
    """NoSchedule | PreferNoSchedule | NoExecute"""


class NodeConfig(_Out):
    """Where a node's plugin config comes from."""

    daemonset: str | None
    """namespace/name of the plugin DaemonSet"""
    managed_by: Literal["gpu-operator", "helm", "other"] | None
    """Who installed the DaemonSet: gpu-operator | helm | other"""
    source: str | None
    """e.g. configmap/nvidia-device-plugin-config#config.yaml"""
    configmap: str | None
    """namespace/name of the ConfigMap the config comes from; null: none"""
    key: str | None
    """The key of that ConfigMap the plugin reads"""
    label: str | None
    """The node's nvidia.com/device-plugin.config value"""
    mig_strategy: str | None
    """The config's migStrategy: none | single | mixed"""
    change_with: str | None = None
    """How this install's config is changed (read-only ones)"""
    allocation_policy: str | None = None
    """flags.plugin.sharedDevicesAllocationPolicy (v0.20): distributed | packed"""
    fail_requests_greater_than_one: bool = False
    """Time-slicing/MPS: a request of 2+ shared slots is refused"""


class NodeState(_Out):
    """One node's accounting next to its reality."""

    name: str
    """The node's name"""
    labels: dict[str, str] = Field(default_factory=dict)
    """The node's labels"""
    ready: bool
    """The node's Ready condition"""
    gpu_node: bool
    """True when the node has NVIDIA GPUs (labels, capacity or an agent report)"""
    k3s: bool
    """True on k3s (its containerd needs runtimeClassName: nvidia)"""
    mode: Mode
    """Sharing mode of this node's config: basic | time-slicing | mps | unknown"""
    resource: str
    """The node's main GPU resource, e.g. nvidia.com/gpu"""
    replicas: int
    """Slots per GPU on this node"""
    physical_gpus: int | None
    """From the agent report; null without one"""
    visible_gpus: int | None
    """GPUs the plugin sees"""
    host_gpus: int | None
    """GPUs kept for host processes"""
    failing_gpus: int = 0
    """GPUs not advertised because the node's plugin pod fails"""
    expected_slots: int | None
    """Slots the config and the visible GPUs should give (visible x replicas); null when unknown"""
    capacity: int | None
    """status.capacity of the main resource; null when absent"""
    allocatable: int | None
    """status.allocatable of the main resource; null when absent"""
    requested: int
    """Slots of the main resource held by pods bound to the node"""
    free: int | None
    """Schedulable free slots (never negative, 0 when unschedulable); null without allocatable"""
    plugin_pod: PluginPod | None
    """The node's device-plugin pod; null when none runs there"""
    agent: AgentState | None
    """The newest agent report; null when the node never reported"""
    gpus: list[GpuState]
    """Every GPU the agent reports, in index order"""
    pods: list[PodSlots]
    """Pods on the node that hold GPU slots"""
    findings: list[Finding]
    """The node's findings (node, GPU and pod scope), worst first"""
    allocation: Allocation = "none"
    """Who hands out the GPUs: device-plugin | dra | both | none"""
    dra_devices: list[DraDeviceState] = Field(default_factory=list)
    """DRA devices of GPUs the agent did not report"""
    dra_devices_omitted: int = 0
    """DRA devices the node JSON leaves out (it lists at most 64, its GPUs' first): GET
    /api/v1/nodes/{name}/dra-devices pages them all"""
    schedulable: bool = True
    """False when NotReady, cordoned or tainted against GPU pods"""
    unschedulable_reason: str | None = None
    """NotReady, cordoned or tainted <key>=<value>:<effect>"""
    cordoned: bool = False
    """spec.unschedulable (kubectl cordon)"""
    taints: list[NodeTaint] = Field(default_factory=list)
    """spec.taints"""
    config: NodeConfig | None = None
    """Where the node's plugin config comes from; null without a plugin DaemonSet"""
    resources: dict[str, ResourceState] = Field(default_factory=dict)
    """Every GPU resource the node advertises or pods hold"""
    stranded: int = 0
    """Free slots of the node's resource stranded"""
    owners: dict[str, str] = Field(default_factory=dict, exclude=True)
    """The owner (namespace/who) of each pod holding the node's GPUs, by pod (namespace/name): the
    usage answers', left out of the node JSON"""


class PluginState(_Out):
    """The device-plugin DaemonSet and the config it runs with."""

    name: str
    """Name of the device-plugin DaemonSet"""
    namespace: str
    """Its namespace"""
    found: bool
    """False when the DaemonSet does not exist"""
    image: str | None
    """The plugin container's image; null when not found"""
    version: str | None
    """The image tag read as a version, e.g. v0.17.1; null when unknown"""
    ready: int
    """Plugin pods ready (status.numberReady)"""
    desired: int
    """Plugin pods the DaemonSet should run (status.desiredNumberScheduled)"""
    config_source: str | None
    """e.g. configmap/nvidia-device-plugin-config#config.yaml"""
    config_node_label: str | None = None
    """The node label naming each node's config in config_source (config-manager)"""
    operator_managed: bool
    """True when the GPU Operator owns the DaemonSet (read-only here)"""
    mode: Mode
    """Sharing mode of the cluster-wide config: basic | time-slicing | mps | unknown"""
    replicas: int
    """Slots per GPU (time-slicing / MPS replicas; 1 in basic mode)"""
    resource: str
    """The resource pods request, e.g. nvidia.com/gpu or nvidia.com/gpu.shared"""
    rename_by_default: bool
    """The config's renameByDefault: shared GPUs advertised as <resource>.shared"""
    fail_requests_greater_than_one: bool
    """The config's failRequestsGreaterThanOne: the plugin refuses pods asking for 2+ shared slots
    """
    allocation_policy: str = "distributed"
    """flags.plugin.sharedDevicesAllocationPolicy (v0.20): distributed | packed"""


class Totals(_Out):
    physical_gpus: int
    """GPUs the agents report, over all nodes"""
    visible_gpus: int
    """GPUs the device plugins see"""
    host_gpus: int
    """GPUs deliberately kept out of Kubernetes for host processes"""
    failing_gpus: int = 0
    """GPUs not advertised because their node's plugin pod fails"""
    allocatable: int
    """Slots advertised (status.allocatable of the main resource), summed"""
    requested: int
    """Slots held by pods, summed"""
    free: int
    """Schedulable free slots, summed (never negative per node)"""
    stranded: int = 0
    """Free slots on unschedulable nodes"""
    pending: int = 0
    """Slots wanted by pods not yet scheduled"""


class PendingDemand(_Out):
    """Pods not yet bound that want a GPU resource, and why they cannot fit now."""

    resource: str
    """The GPU resource the pods ask for, e.g. nvidia.com/gpu"""
    pods: int
    """Unscheduled pods asking for it"""
    slots: int
    """Slots those pods ask for, together"""
    oldest_s: float
    """Seconds the oldest of them has waited"""
    reason: str
    """Why they cannot fit now, a code: not-advertised (no node advertises the resource),
    refused-above-one (the plugin refuses requests above 1), too-large (the largest schedulable
    free of one node is below the smallest request), fits (waits on the scheduler)"""
    smallest: int = 0
    """The smallest request among them"""
    largest: int = 0
    """The largest schedulable free slot count of one advertising node"""


class PendingPod(_Out):
    """A pod no node holds yet that asks for GPU resources, as the pods' one parse read it
    (a pod whose request cannot be counted is set aside there and is not one)."""

    pod: str
    """namespace/name"""
    namespace: str
    owner: str
    """namespace/who (see app.domain.usage.holders.owner_of)"""
    slots: dict[str, int]
    """Slots asked per GPU resource"""


class IdleSlots(_Out):
    """Slots one pod holds on one GPU with no process of it there for `idle_for_s` (the idle
    history's, past its threshold: each is also a `slot-held-idle` finding)."""

    pod: str
    """namespace/name"""
    node: str
    gpu_uuid: str
    slots: int
    idle_for_s: int


class Snapshot(_Out):
    """Everything the dashboard shows, computed at `generated_at` from one cluster view."""

    generated_at: datetime
    stale: bool = False
    stale_age_s: float | None = None
    plugin: PluginState
    totals: Totals
    nodes: list[NodeState]
    findings: list[Finding]
    dra: DraSummary = EMPTY_SUMMARY
    mode: str = "unknown"
    """basic | time-slicing | mps | mixed | unknown (per node)"""
    resources: dict[str, ResourceState] = Field(default_factory=dict)
    pending_demand: list[PendingDemand] = Field(default_factory=list)
    pending_pods: list[PendingPod] = Field(default_factory=list)
    """The pods behind `pending_demand`, by pod"""
    idle_slots: list[IdleSlots] = Field(default_factory=list)
    """Held slots idle past the threshold, per holder (pod x GPU): added with the idle history's
    findings after the engine (app.web.services.snapshots.idle_history)"""

    def severity_counts(self) -> dict[str, int]:
        counts = {severity.value: 0 for severity in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts
