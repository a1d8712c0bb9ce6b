"""A GPU in the snapshot: its slots and who holds them, its memory, processes and MIG devices.

Part of the engine's output and, serialised as it is, of the JSON API's node shape;
app.domain.snapshot re-exports these names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.domain.dra_models import DraDeviceState, DraSharing
from app.domain.finding_model import Frozen as _Out
from app.domain.finding_model import Severity
from app.domain.health import GpuHealthReading


class GpuProcess(_Out):
    """A compute process on a GPU and who it belongs to."""

    pid: int
    """Host PID"""
    used_memory_mib: int | None
    """GPU memory of the process in MiB; null when unknown"""
    owner: Literal["pod", "host", "unknown"]
    """pod: a pod's container; host: outside Kubernetes; unknown: the agent could not see it"""
    pod: str | None = None
    """namespace/name when the pod is known"""
    pod_uid: str | None = None
    """The pod's UID, when the owner is a pod"""
    container: str | None = None
    """Container ID from the process's cgroup"""
    command: str | None = None
    """Command line"""
    user: str | None = None
    """User name of a host process"""


class SlotHolder(_Out):
    """A pod holding slots of one GPU (or of one MIG device on it), or a DRA claim's device."""

    pod: str
    """namespace/name"""
    slots: int
    """Slots it holds of this GPU or MIG device"""
    assigned: bool
    """True when the kubelet's assignment is known; False when inferred"""
    assignment: Literal["kubelet", "inferred", "claim", "reservation", "process"] = "inferred"
    """kubelet: from the PodResources API via the agent; inferred: from requests; claim: from a DRA
    claim's allocation and reservedFor; reservation: a GPU fraction named by the KAI reservation
    pod of its GPU group; process: a GPU fraction placed by the pod's processes the agent saw on
    the GPU"""
    resource: str = "nvidia.com/gpu"
    """The resource the slots are of (DRA: the DeviceClass of the request)"""
    source: Literal["device-plugin", "dra", "fraction"] = "device-plugin"
    """How the GPU is handed out; fraction: a share of it (KAI / Run:ai gpu-fraction, gpu-memory),
    with no slot"""
    container: str | None = None
    """Container, when the kubelet says"""
    replicas: list[int] = Field(default_factory=list)
    """Replica numbers n of <UUID>::n ids (kubelet only)"""
    claim: str | None = None
    """DRA: the claim's namespace/name"""
    sharing: DraSharing | None = None
    """DRA: how the claim shares"""
    device: str | None = None
    """DRA: the device, e.g. gpu-0"""
    share: float | None = None
    """fraction: the share of the GPU's memory asked (0-1)"""
    memory_limit_mib: int | None = None
    """fraction: the GPU memory the pod may use (not enforced)"""
    gpu_group: str | None = None
    """KAI: the GPU group (runai-gpu-group) of a fraction or its reservation pod"""


class MigDeviceState(_Out):
    """A MIG device on its parent GPU: the resource it is advertised under and who holds it."""

    uuid: str
    """MIG device UUID, MIG-..."""
    profile: str
    """MIG profile, e.g. 1g.10gb"""
    resource: str | None
    """e.g. nvidia.com/mig-1g.10gb; null when the MIG strategy hides it"""
    slots: int
    """Slots this device gives Kubernetes"""
    held_slots: int
    """Slots of the device held by pods"""
    holders: list[SlotHolder]
    """Who holds them"""
    memory_total_mib: int | None
    """Memory of the device in MiB"""
    memory_used_mib: int | None
    """Memory used on it in MiB"""
    processes: list[GpuProcess]
    """Compute processes on the device"""


class GpuState(_Out):
    """One physical GPU: its slots, its memory split and its processes."""

    index: int
    """NVML index (nvidia-smi: index)"""
    uuid: str
    """GPU UUID, GPU-..."""
    name: str
    """Product name, e.g. NVIDIA A100-SXM4-80GB"""
    role: Literal["advertised", "dra", "host", "failing", "unknown"]
    """advertised: visible to the plugin; dra: published by a DRA driver; host: deliberately kept
    out of Kubernetes by a working plugin; failing: not advertised because the node's plugin
    fails"""
    slots: int
    """Slots this GPU should give Kubernetes (replicas or 1; 0 for host)"""
    held_slots: int
    """Slots of this GPU held by pods"""
    holders: list[SlotHolder]
    """Who holds its slots, and how that is known"""
    memory_total_mib: int | None
    """memory.total in MiB; null where Not Supported"""
    memory_used_mib: int | None
    """memory.used in MiB; null where Not Supported"""
    memory_pods_mib: int
    """Memory of processes attributed to pods, in MiB"""
    memory_host_mib: int
    """Memory of the other processes (host, or not seen), in MiB"""
    utilization_pct: int | None
    """utilization.gpu in percent; null on MIG-enabled GPUs"""
    mig_mode: str | None
    """enabled | disabled; null where the GPU has no MIG"""
    processes: list[GpuProcess]
    """Compute processes on the GPU, with their owners"""
    finding_codes: list[str]
    """Codes of the findings about this GPU"""
    worst_severity: Severity | None
    """The worst severity among them; null when none"""
    dra_devices: list[DraDeviceState] = Field(default_factory=list)
    """DRA devices published for this GPU (MIG: several)"""
    mig_devices: list[MigDeviceState] = Field(default_factory=list)
    """The GPU's MIG devices, under a MIG strategy"""
    health: GpuHealthReading | None = None
    """The agent's health readings of the GPU; null: none sent"""
