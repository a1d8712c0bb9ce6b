"""The snapshot: what the accounting engine concludes about the cluster at one moment.

These models are the engine's output and, serialised as they are, the JSON API's node and
GPU shapes; pages read them too, so nothing from the Kubernetes client or NVML leaks past.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field

from app.domain.dra_models import EMPTY_SUMMARY, Allocation, DraDeviceState, DraSharing, DraSummary
from app.domain.finding_model import SEVERITY_RANK as SEVERITY_RANK
from app.domain.finding_model import EvidenceValue as EvidenceValue
from app.domain.finding_model import Finding as Finding
from app.domain.finding_model import Frozen as _Out
from app.domain.finding_model import Scope as Scope
from app.domain.finding_model import Severity as Severity
from app.domain.health import GpuHealthReading


class Mode(StrEnum):
    BASIC = "basic"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    UNKNOWN = "unknown"


class GpuProcess(_Out):
    """A compute process on a GPU and who it belongs to."""

    pid: int
    used_memory_mib: int | None
    owner: Literal["pod", "host", "unknown"]
    pod: str | None = Field(default=None, description="namespace/name when the pod is known")
    pod_uid: str | None = None
    container: str | None = None
    command: str | None = None
    user: str | None = None


class SlotHolder(_Out):
    """A pod holding slots of one GPU (or of one MIG device on it), or a DRA claim's device."""

    pod: str = Field(description="namespace/name")
    slots: int
    assigned: bool = Field(
        description="True when the kubelet's assignment is known; False when inferred"
    )
    assignment: Literal["kubelet", "inferred", "claim", "reservation", "process"] = Field(
        default="inferred",
        description="kubelet: from the PodResources API via the agent; inferred: from requests; "
        "claim: from a DRA claim's allocation and reservedFor; reservation: a GPU fraction "
        "named by the KAI reservation pod of its GPU group; process: a GPU fraction placed by "
        "the pod's processes the agent saw on the GPU",
    )
    resource: str = Field(
        default="nvidia.com/gpu",
        description="The resource the slots are of (DRA: the DeviceClass of the request)",
    )
    source: Literal["device-plugin", "dra", "fraction"] = Field(
        default="device-plugin",
        description="How the GPU is handed out; fraction: a share of it (KAI / Run:ai "
        "gpu-fraction, gpu-memory), with no slot",
    )
    container: str | None = Field(default=None, description="Container, when the kubelet says")
    replicas: list[int] = Field(
        default_factory=list, description="Replica numbers n of <UUID>::n ids (kubelet only)"
    )
    claim: str | None = Field(default=None, description="DRA: the claim's namespace/name")
    sharing: DraSharing | None = Field(default=None, description="DRA: how the claim shares")
    device: str | None = Field(default=None, description="DRA: the device, e.g. gpu-0")
    share: float | None = Field(
        default=None, description="fraction: the share of the GPU's memory asked (0-1)"
    )
    memory_limit_mib: int | None = Field(
        default=None, description="fraction: the GPU memory the pod may use (not enforced)"
    )
    gpu_group: str | None = Field(
        default=None,
        description="KAI: the GPU group (runai-gpu-group) of a fraction or its reservation pod",
    )


class MigDeviceState(_Out):
    """A MIG device on its parent GPU: the resource it is advertised under and who holds it."""

    uuid: str
    profile: str
    resource: str | None = Field(
        description="e.g. nvidia.com/mig-1g.10gb; null when the MIG strategy hides it"
    )
    slots: int = Field(description="Slots this device gives Kubernetes")
    held_slots: int
    holders: list[SlotHolder]
    memory_total_mib: int | None
    memory_used_mib: int | None
    processes: list[GpuProcess]


class ResourceState(_Out):
    """One extended resource on a node or in the cluster."""

    allocatable: int = Field(description="status.allocatable (0 when absent)")
    requested: int = Field(description="Held by pods bound to the node")
    free: int = Field(description="Schedulable free: never negative, 0 on unschedulable nodes")
    stranded: int = Field(description="Free but on a node no new pod can be scheduled on")


class GpuState(_Out):
    """One physical GPU: its slots, its memory split and its processes."""

    index: int
    uuid: str
    name: str
    role: Literal["advertised", "dra", "host", "failing", "unknown"] = Field(
        description="advertised: visible to the plugin; dra: published by a DRA driver; "
        "host: deliberately kept out of Kubernetes by a working plugin; failing: not "
        "advertised because the node's plugin fails"
    )
    slots: int = Field(
        description="Slots this GPU should give Kubernetes (replicas or 1; 0 for host)"
    )
    held_slots: int
    holders: list[SlotHolder]
    memory_total_mib: int | None
    memory_used_mib: int | None
    memory_pods_mib: int
    memory_host_mib: int
    utilization_pct: int | None
    mig_mode: str | None
    processes: list[GpuProcess]
    finding_codes: list[str]
    worst_severity: Severity | None
    dra_devices: list[DraDeviceState] = Field(
        default_factory=list, description="DRA devices published for this GPU (MIG: several)"
    )
    mig_devices: list[MigDeviceState] = Field(default_factory=list)
    health: GpuHealthReading | None = Field(
        default=None, description="The agent's health readings of the GPU; null: none sent"
    )


class AgentState(_Out):
    """The newest agent report of a node and how old it is."""

    collected_at: datetime
    received_at: datetime
    age_s: float
    fresh: bool
    source: str
    driver_version: str | None
    error: str | None


class PluginPod(_Out):
    """A device-plugin pod on a node."""

    name: str
    phase: str
    ready: bool
    started_at: datetime | None
    image: str | None
    state: str | None = Field(
        default=None,
        description="The container's waiting/terminated reason (CrashLoopBackOff, "
        "ContainerCreating, ...) or Running; what `kubectl get pods` shows as STATUS",
    )
    restarts: int = 0


class PodSlots(_Out):
    """A pod on a node that holds GPU slots."""

    pod: str = Field(description="namespace/name")
    uid: str
    phase: str
    slots: int
    resource: str
    share: float | None = Field(
        default=None,
        description="GPU fraction pods (slots 0, resource the annotation): the share of one "
        "GPU they hold, summed over the GPUs it is seen on; null when not known",
    )


class NodeTaint(_Out):
    """A taint of a node (spec.taints[]): pods that do not tolerate it are kept off."""

    key: str = Field(description="The taint's key")
    value: str | None = Field(default=None, description="The taint's value; null when none")
    effect: str = Field(description="NoSchedule | PreferNoSchedule | NoExecute")


class NodeConfig(_Out):
    """Where a node's plugin config comes from."""

    daemonset: str | None = Field(description="namespace/name of the plugin DaemonSet")
    managed_by: Literal["gpu-operator", "helm", "other"] | None
    source: str | None = Field(description="e.g. configmap/nvidia-device-plugin-config#config.yaml")
    configmap: str | None
    key: str | None
    label: str | None = Field(description="The node's nvidia.com/device-plugin.config value")
    mig_strategy: str | None
    change_with: str | None = Field(
        default=None, description="How this install's config is changed (read-only ones)"
    )
    allocation_policy: str | None = Field(
        default=None,
        description="flags.plugin.sharedDevicesAllocationPolicy (v0.20): distributed | packed",
    )
    fail_requests_greater_than_one: bool = Field(
        default=False, description="Time-slicing/MPS: a request of 2+ shared slots is refused"
    )


class NodeState(_Out):
    """One node's accounting next to its reality."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict, description="The node's labels")
    ready: bool
    gpu_node: bool
    k3s: bool
    mode: Mode
    resource: str
    replicas: int
    physical_gpus: int | None = Field(description="From the agent report; null without one")
    visible_gpus: int | None = Field(description="GPUs the plugin sees")
    host_gpus: int | None = Field(description="GPUs kept for host processes")
    failing_gpus: int = Field(
        default=0, description="GPUs not advertised because the node's plugin pod fails"
    )
    expected_slots: int | None
    capacity: int | None
    allocatable: int | None
    requested: int
    free: int | None
    plugin_pod: PluginPod | None
    agent: AgentState | None
    gpus: list[GpuState]
    pods: list[PodSlots]
    findings: list[Finding]
    allocation: Allocation = Field(
        default="none", description="Who hands out the GPUs: device-plugin | dra | both | none"
    )
    dra_devices: list[DraDeviceState] = Field(
        default_factory=list, description="DRA devices of GPUs the agent did not report"
    )
    dra_devices_omitted: int = Field(
        default=0,
        description="DRA devices the node JSON leaves out (it lists at most 64, its GPUs' "
        "first): GET /api/v1/nodes/{name}/dra-devices pages them all",
    )
    schedulable: bool = True
    unschedulable_reason: str | None = Field(
        default=None, description="NotReady, cordoned or tainted <key>=<value>:<effect>"
    )
    cordoned: bool = Field(default=False, description="spec.unschedulable (kubectl cordon)")
    taints: list[NodeTaint] = Field(default_factory=list, description="spec.taints")
    config: NodeConfig | None = None
    resources: dict[str, ResourceState] = Field(
        default_factory=dict, description="Every GPU resource the node advertises or pods hold"
    )
    stranded: int = Field(default=0, description="Free slots of the node's resource stranded")
    owners: dict[str, str] = Field(
        default_factory=dict,
        exclude=True,
        description="The owner (namespace/who) of each pod holding the node's GPUs, by pod "
        "(namespace/name): the usage answers', left out of the node JSON",
    )


class PluginState(_Out):
    """The device-plugin DaemonSet and the config it runs with."""

    name: str
    namespace: str
    found: bool
    image: str | None
    version: str | None
    ready: int
    desired: int
    config_source: str | None = Field(
        description="e.g. configmap/nvidia-device-plugin-config#config.yaml"
    )
    config_node_label: str | None = Field(
        default=None,
        description="The node label naming each node's config in config_source (config-manager)",
    )
    operator_managed: bool
    mode: Mode
    replicas: int
    resource: str
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    allocation_policy: str = Field(
        default="distributed",
        description="flags.plugin.sharedDevicesAllocationPolicy (v0.20): distributed | packed",
    )


class Totals(_Out):
    physical_gpus: int
    visible_gpus: int
    host_gpus: int
    failing_gpus: int = 0
    allocatable: int
    requested: int
    free: int
    stranded: int = Field(default=0, description="Free slots on unschedulable nodes")
    pending: int = Field(default=0, description="Slots wanted by pods not yet scheduled")


class PendingDemand(_Out):
    """Pods not yet bound that want a GPU resource, and why they cannot fit now."""

    resource: str
    pods: int
    slots: int
    oldest_s: float
    reason: str  # a code: not-advertised, refused-above-one, too-large, fits
    smallest: int = 0  # the smallest request among the pods
    largest: int = 0  # the largest schedulable free slot count of one advertising node


class PendingPod(_Out):
    """A pod no node holds yet that asks for GPU resources, as the pods' one parse read it
    (a pod whose request cannot be counted is set aside there and is not one)."""

    pod: str = Field(description="namespace/name")
    namespace: str
    owner: str = Field(description="namespace/who (see app.domain.usage.holders.owner_of)")
    slots: dict[str, int] = Field(description="Slots asked per GPU resource")


class IdleSlots(_Out):
    """Slots one pod holds on one GPU with no process of it there for `idle_for_s` (the idle
    history's, past its threshold: each is also a `slot-held-idle` finding)."""

    pod: str = Field(description="namespace/name")
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
    mode: str = Field(
        default="unknown", description="basic | time-slicing | mps | mixed | unknown (per node)"
    )
    resources: dict[str, ResourceState] = Field(default_factory=dict)
    pending_demand: list[PendingDemand] = Field(default_factory=list)
    pending_pods: list[PendingPod] = Field(
        default_factory=list, description="The pods behind `pending_demand`, by pod"
    )
    idle_slots: list[IdleSlots] = Field(
        default_factory=list,
        description="Held slots idle past the threshold, per holder (pod x GPU): added with "
        "the idle history's findings after the engine (app.web.services.idle_history)",
    )

    def severity_counts(self) -> dict[str, int]:
        counts = {severity.value: 0 for severity in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts
