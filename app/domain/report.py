"""The agent report: what a node agent saw on its GPUs, versioned (schema 1).

The agent builds it, the dashboard validates it on `POST /api/v1/agent/reports`, and the
simulator's simulated agents send the same shape, so all three share this one model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

REPORT_SCHEMA = 1


def _not_bool(value: object) -> object:
    # JSON Schema's integer is not a boolean; lax pydantic would read `false` as 0.
    if isinstance(value, bool):
        raise ValueError("a number is required, not a boolean")
    return value


Count = Annotated[int, Field(ge=0), BeforeValidator(_not_bool)]
Percent = Annotated[int, Field(ge=0, le=100), BeforeValidator(_not_bool)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProcessReading(_Strict):
    """One compute process on a GPU (NVML PIDs are host PIDs)."""

    pid: Count = Field(description="Host PID (nvidia-smi: pid)")
    used_memory_mib: Count | None = Field(
        default=None,
        description="GPU memory of the process in MiB (used_memory); null when unknown",
    )
    pod_uid: str | None = Field(
        default=None,
        max_length=64,
        description="UID of the pod owning the process; null for a host process",
    )
    container: str | None = Field(
        default=None, max_length=128, description="Container ID from the process's cgroup"
    )
    command: str | None = Field(default=None, max_length=4096, description="Command line")
    user: str | None = Field(
        default=None, max_length=256, description="User name of a host process"
    )
    visible: StrictBool = Field(
        default=True,
        description="False when the agent could not see the PID (no host PID namespace)",
    )


# --- MIG devices (issue 12): a MIG-enabled GPU reports the devices carved out of it. ---


class MigDeviceReading(_Strict):
    """One MIG device on its parent GPU (nvidia-smi -L / NVML MIG device handles)."""

    uuid: str = Field(min_length=1, max_length=128, description="MIG UUID, e.g. MIG-<uuid>")
    profile: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[0-9a-z.+-]+$",
        description="MIG profile, e.g. 1g.10gb, 1g.24gb+me, 1c.2g.20gb",
    )
    gpu_instance: Count | None = Field(default=None, description="GPU instance ID")
    compute_instance: Count | None = Field(default=None, description="Compute instance ID")
    memory_total_mib: Count | None = Field(default=None, description="Memory of the device")
    memory_used_mib: Count | None = Field(default=None, description="Memory used on it")
    processes: list[ProcessReading] = Field(default_factory=list, max_length=4096)


# --- end of the MIG block ---


class GpuReading(_Strict):
    """One physical GPU as NVML or nvidia-smi reports it."""

    index: Count = Field(description="NVML index (nvidia-smi: index)")
    uuid: str = Field(min_length=1, max_length=128, description="GPU UUID (nvidia-smi: uuid)")
    name: str = Field(default="", max_length=256, description="Product name (nvidia-smi: name)")
    memory_total_mib: Count | None = Field(
        default=None, description="memory.total in MiB; null where Not Supported"
    )
    memory_used_mib: Count | None = Field(
        default=None, description="memory.used in MiB; null where Not Supported"
    )
    utilization_pct: Percent | None = Field(default=None, description="utilization.gpu in percent")
    mig_mode: Literal["enabled", "disabled"] | None = Field(
        default=None, description="mig.mode.current; null where the GPU has no MIG"
    )
    processes: list[ProcessReading] = Field(default_factory=list, max_length=4096)
    mig_devices: list[MigDeviceReading] = Field(
        default_factory=list, max_length=64, description="MIG devices (issue 12 block above)"
    )


class DeviceAssignment(_Strict):
    """Devices the kubelet assigned to one pod container (from the PodResources API)."""

    namespace: str = Field(max_length=253)
    pod: str = Field(max_length=253)
    container: str = Field(max_length=253)
    resource: str = Field(max_length=253, description="e.g. nvidia.com/gpu")
    device_ids: list[str] = Field(
        max_length=1024, description="GPU UUIDs, or UUID::n replicas under time-slicing"
    )


class DraAssignment(_Strict):
    """A DRA device the kubelet prepared for one pod container (PodResources dynamic_resources)."""

    namespace: str = Field(max_length=253)
    pod: str = Field(max_length=253)
    container: str = Field(max_length=253)
    claim_namespace: str = Field(max_length=253)
    claim: str = Field(max_length=253, description="The ResourceClaim's name")
    driver: str = Field(max_length=253, description="e.g. gpu.nvidia.com")
    pool: str = Field(max_length=253)
    device: str = Field(max_length=253, description="Device name in the slice, e.g. gpu-0")


class AgentReport(_Strict):
    """Schema 1 of the report a node agent POSTs to the dashboard."""

    schema_: Literal[1] = Field(alias="schema", description="Report schema version")
    node: str = Field(min_length=1, max_length=253, description="Kubernetes node name")
    collected_at: AwareDatetime = Field(description="When the readings were taken (UTC)")
    source: Literal["nvml", "nvidia-smi", "none"] = Field(
        description="Which reader produced the GPUs; none when no reader worked"
    )
    driver_version: str | None = Field(default=None, max_length=64)
    error: str | None = Field(
        default=None, max_length=2048, description="Why no GPU could be read, when source is none"
    )
    gpus: list[GpuReading] = Field(default_factory=list, max_length=64)
    assignments: list[DeviceAssignment] | None = Field(
        default=None,
        description="Kubelet device assignments, when the PodResources socket is mounted",
    )
    agent_version: str | None = Field(default=None, max_length=64)
    dra_assignments: list[DraAssignment] | None = Field(
        default=None,
        max_length=256,
        description="DRA devices per pod container from the kubelet's PodResources "
        "(dynamic_resources); null when the socket is not read",
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ReceivedReport(BaseModel):
    """A report as the dashboard keeps it: the newest good one per node, with its arrival."""

    model_config = ConfigDict(frozen=True)

    report: AgentReport
    received_at: datetime
