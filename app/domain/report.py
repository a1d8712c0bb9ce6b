"""The agent report: what a node agent saw on its GPUs, versioned (schema 1).

The agent builds it, the dashboard validates it on `POST /api/v1/agent/reports`, and the
simulator's simulated agents send the same shape, so all three share this one model.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import (
    AwareDatetime,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)

from app.domain.described import Described
from app.domain.health import GpuHealthReading

REPORT_SCHEMA = 1

# Bounds on every number an agent sends: far above any real GPU, far below what could
# overflow a sum or a float in the engine (one report with 10**400 MiB once froze it).
MAX_MEMORY_MIB = 1 << 20  # 1 TiB of GPU memory
MAX_PID = 1 << 22  # Linux's largest pid_max
MAX_GPU_INDEX = 1023
# How far `collected_at` may lie ahead of the dashboard's clock.
MAX_CLOCK_SKEW = timedelta(seconds=120)

# Identifiers that reach copyable commands: a conservative alphabet, no shell syntax.
GPU_UUID_PATTERN = r"^GPU-[A-Za-z0-9][A-Za-z0-9-]{0,123}$"
MIG_UUID_PATTERN = r"^MIG-[A-Za-z0-9][A-Za-z0-9/-]{0,123}$"
DEVICE_ID_PATTERN = r"^(GPU|MIG)-[A-Za-z0-9][A-Za-z0-9/-]{0,123}(::[0-9]{1,4})?$"
NODE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
POD_UID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$"
CONTAINER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
K8S_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
RESOURCE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,252}$"

# Strict integers: JSON `"0"` or `false` is not a number (lax pydantic would take both).
Count = Annotated[StrictInt, Field(ge=0)]
MemoryMib = Annotated[StrictInt, Field(ge=0, le=MAX_MEMORY_MIB)]
Percent = Annotated[StrictInt, Field(ge=0, le=100)]
InstanceId = Annotated[StrictInt, Field(ge=0, le=MAX_GPU_INDEX)]


class _Strict(Described):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProcessReading(_Strict):
    """One compute process on a GPU (NVML PIDs are host PIDs)."""

    pid: Annotated[StrictInt, Field(ge=0, le=MAX_PID)]
    """Host PID (nvidia-smi: pid)"""
    used_memory_mib: MemoryMib | None = None
    """GPU memory of the process in MiB (used_memory); null when unknown"""
    pod_uid: str | None = Field(default=None, pattern=POD_UID_PATTERN)
    """UID of the pod owning the process; null for a host process"""
    container: str | None = Field(default=None, pattern=CONTAINER_ID_PATTERN)
    """Container ID from the process's cgroup"""
    command: str | None = Field(default=None, max_length=4096)
    """Command line"""
    user: str | None = Field(default=None, max_length=256)
    """User name of a host process"""
    visible: StrictBool = True
    """False when the agent could not see the PID (no host PID namespace)"""


# --- MIG devices (issue 12): a MIG-enabled GPU reports the devices carved out of it. ---


class MigDeviceReading(_Strict):
    """One MIG device on its parent GPU (nvidia-smi -L / NVML MIG device handles)."""

    uuid: str = Field(pattern=MIG_UUID_PATTERN)
    """MIG UUID, e.g. MIG-<uuid>"""
    profile: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-z.+-]+$")
    """MIG profile, e.g. 1g.10gb, 1g.24gb+me, 1c.2g.20gb"""
    gpu_instance: InstanceId | None = None
    """GPU instance ID"""
    compute_instance: InstanceId | None = None
    """Compute instance ID"""
    memory_total_mib: MemoryMib | None = None
    """Memory of the device"""
    memory_used_mib: MemoryMib | None = None
    """Memory used on it"""
    processes: list[ProcessReading] = Field(default_factory=list, max_length=4096)
    """Compute processes on the MIG device (at most 4096)"""


# --- end of the MIG block ---


class GpuReading(_Strict):
    """One physical GPU as NVML or nvidia-smi reports it."""

    index: Annotated[StrictInt, Field(ge=0, le=MAX_GPU_INDEX)]
    """NVML index (nvidia-smi: index)"""
    uuid: str = Field(pattern=GPU_UUID_PATTERN)
    """GPU UUID, GPU-... (nvidia-smi: uuid)"""
    name: str = Field(default="", max_length=256)
    """Product name (nvidia-smi: name)"""
    memory_total_mib: MemoryMib | None = None
    """memory.total in MiB; null where Not Supported"""
    memory_used_mib: MemoryMib | None = None
    """memory.used in MiB; null where Not Supported"""
    utilization_pct: Percent | None = None
    """utilization.gpu in percent"""
    mig_mode: Literal["enabled", "disabled"] | None = None
    """mig.mode.current; null where the GPU has no MIG"""
    processes: list[ProcessReading] = Field(default_factory=list, max_length=4096)
    """Compute processes on the GPU (at most 4096)"""
    mig_devices: list[MigDeviceReading] = Field(default_factory=list, max_length=64)
    """MIG devices (issue 12 block above)"""
    health: GpuHealthReading | None = None
    """Temperature, power, ECC, XID (issue 31); null: not read"""


class DeviceAssignment(_Strict):
    """Devices the kubelet assigned to one pod container (from the PodResources API)."""

    namespace: str = Field(pattern=K8S_NAME_PATTERN)
    """The pod's namespace"""
    pod: str = Field(pattern=K8S_NAME_PATTERN)
    """The pod's name"""
    container: str = Field(pattern=K8S_NAME_PATTERN)
    """The container the devices were assigned to"""
    resource: str = Field(pattern=RESOURCE_PATTERN)
    """e.g. nvidia.com/gpu"""
    device_ids: list[Annotated[str, Field(pattern=DEVICE_ID_PATTERN)]] = Field(max_length=1024)
    """GPU UUIDs, or UUID::n replicas under time-slicing"""


class DraAssignment(_Strict):
    """A DRA device the kubelet prepared for one pod container (PodResources dynamic_resources)."""

    namespace: str = Field(max_length=253)
    """The pod's namespace"""
    pod: str = Field(max_length=253)
    """The pod's name"""
    container: str = Field(max_length=253)
    """The container the device was prepared for"""
    claim_namespace: str = Field(max_length=253)
    """The ResourceClaim's namespace"""
    claim: str = Field(max_length=253)
    """The ResourceClaim's name"""
    driver: str = Field(max_length=253)
    """e.g. gpu.nvidia.com"""
    pool: str = Field(max_length=253)
    """The ResourceSlice pool of the device"""
    device: str = Field(max_length=253)
    """Device name in the slice, e.g. gpu-0"""


class AgentReport(_Strict):
    """Schema 1 of the report a node agent POSTs to the dashboard."""

    schema_: Literal[1] = Field(alias="schema")
    """Report schema version"""
    node: str = Field(pattern=NODE_NAME_PATTERN)
    """Kubernetes node name"""
    collected_at: AwareDatetime
    """When the readings were taken (UTC)"""
    source: Literal["nvml", "nvidia-smi", "none"]
    """Which reader produced the GPUs; none when no reader worked"""
    driver_version: str | None = Field(default=None, max_length=64)
    """NVIDIA driver version"""
    error: str | None = Field(default=None, max_length=2048)
    """Why no GPU could be read, when source is none"""
    gpus: list[GpuReading] = Field(default_factory=list, max_length=64)
    """Every GPU the agent could read (at most 64)"""
    assignments: list[DeviceAssignment] | None = None
    """Kubelet device assignments, when the PodResources socket is mounted"""
    agent_version: str | None = Field(default=None, max_length=64)
    """The agent's own version"""
    dra_assignments: list[DraAssignment] | None = Field(default=None, max_length=256)
    """DRA devices per pod container from the kubelet's PodResources (dynamic_resources); null when
    the socket is not read"""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _unique_gpus(self) -> AgentReport:
        """Each GPU and MIG device once: two readings of one UUID or index would double count."""
        mig = [device.uuid for gpu in self.gpus for device in gpu.mig_devices]
        for what, values in (
            ("uuid", [gpu.uuid for gpu in self.gpus]),
            ("index", [gpu.index for gpu in self.gpus]),
            ("mig_devices[].uuid", mig),
        ):
            seen: set[object] = set()
            for value in values:
                if value in seen:
                    raise ValueError(f"duplicate gpus[].{what}: {value!r}")
                seen.add(value)
        return self


def seconds_ahead(report: AgentReport, *, now: datetime) -> int | None:
    """How far `collected_at` is ahead of `now` when beyond MAX_CLOCK_SKEW (refused), or None.

    A report dated in the future would outrank every later true report of its node.
    """
    if report.collected_at <= now + MAX_CLOCK_SKEW:
        return None
    return int((report.collected_at - now).total_seconds())


class ReceivedReport(Described):
    """A report as the dashboard keeps it: the newest good one per node, with its arrival."""

    model_config = ConfigDict(frozen=True)

    report: AgentReport
    received_at: datetime
