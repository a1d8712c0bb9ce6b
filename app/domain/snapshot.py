"""The snapshot: what the accounting engine concludes about the cluster at one moment.

These models are the engine's output and, serialised as they are, the JSON API's node and
GPU shapes; pages read them too, so nothing from the Kubernetes client or NVML leaks past.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.dra.models import EMPTY_SUMMARY, Allocation, DraDeviceState, DraSharing, DraSummary

EvidenceValue = str | int | float | bool | None


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Scope(StrEnum):
    CLUSTER = "cluster"
    NODE = "node"
    GPU = "gpu"
    POD = "pod"


class Mode(StrEnum):
    BASIC = "basic"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    UNKNOWN = "unknown"


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class Finding(_Out):
    """One mismatch between accounting and reality, with its cause and remedy."""

    code: str = Field(description="Stable code, documented in docs/findings.md")
    severity: Severity
    scope: Scope
    title: str = Field(description="One line saying what is wrong")
    evidence: dict[str, EvidenceValue] = Field(description="The numbers that disagree")
    remedy: str = Field(description="The command or setting that fixes it")
    node: str | None = None
    gpu_uuid: str | None = None
    pod: str | None = Field(default=None, description="namespace/name")


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
    """A pod holding slots of one GPU, or a device of it through a DRA claim."""

    pod: str = Field(description="namespace/name")
    slots: int
    assigned: bool = Field(
        description="True when the kubelet's assignment is known; False when inferred"
    )
    source: Literal["device-plugin", "dra"] = Field(
        default="device-plugin", description="device-plugin slots or a DRA claim"
    )
    claim: str | None = Field(default=None, description="DRA: the claim's namespace/name")
    sharing: DraSharing | None = Field(default=None, description="DRA: how the claim shares")
    device: str | None = Field(default=None, description="DRA: the device, e.g. gpu-0")


class GpuState(_Out):
    """One physical GPU: its slots, its memory split and its processes."""

    index: int
    uuid: str
    name: str
    role: Literal["advertised", "dra", "host", "unknown"] = Field(
        description="advertised: visible to the plugin; dra: published by a DRA driver; "
        "host: kept out of Kubernetes"
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


class PodSlots(_Out):
    """A pod on a node that holds GPU slots."""

    pod: str = Field(description="namespace/name")
    uid: str
    phase: str
    slots: int
    resource: str


class NodeState(_Out):
    """One node's accounting next to its reality."""

    name: str
    ready: bool
    gpu_node: bool
    k3s: bool
    mode: Mode
    resource: str
    replicas: int
    physical_gpus: int | None = Field(description="From the agent report; null without one")
    visible_gpus: int | None = Field(description="GPUs the plugin sees")
    host_gpus: int | None = Field(description="GPUs kept for host processes")
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
    operator_managed: bool
    mode: Mode
    replicas: int
    resource: str
    rename_by_default: bool
    fail_requests_greater_than_one: bool


class Totals(_Out):
    physical_gpus: int
    visible_gpus: int
    host_gpus: int
    allocatable: int
    requested: int
    free: int


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

    def severity_counts(self) -> dict[str, int]:
        counts = {severity.value: 0 for severity in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts
