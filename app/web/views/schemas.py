"""Response shapes of the JSON API, named by role; node and GPU shapes are the snapshot's own."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.domain.dra_models import DraSummary
from app.domain.snapshot import (
    Finding,
    NodeState,
    PendingDemand,
    PluginState,
    ResourceState,
    Totals,
)
from app.web.views.node_json import NodeDraDeviceOut
from app.web.views.node_list import NodeSummaryOut

_GENERATED_AT = "When the served snapshot was computed (UTC)"
_STALE = "True while the API server cannot be reached or a snapshot build fails"
_STALE_REASON = "Why the snapshot is stale; null when fresh"


class HostHeldGpuOut(BaseModel):
    """A GPU Kubernetes counts as free whose memory host processes mostly hold."""

    node: str = Field(description="The node holding the GPU")
    index: int = Field(description="The GPU's index on its node")
    memory_host_mib: int = Field(description="Memory host processes use on this GPU")
    memory_total_mib: int = Field(description="The GPU's total memory, MiB")


class FreeGpusOut(BaseModel):
    """Free GPUs of one model: whole GPUs apart from shares (time-slices, MPS, MIG slices)."""

    model: str = Field(description="GPU model, e.g. NVIDIA A100-SXM4-80GB")
    whole: int = Field(description="Free whole GPUs: one slot each, nothing held, schedulable")
    shares: int = Field(description="Free shares of GPUs (time-slices, MPS shares, MIG slices)")
    nodes: list[str] = Field(description="Nodes with a free whole GPU or share of this model")
    host_held: list[HostHeldGpuOut] = Field(
        description="GPUs Kubernetes counts as free whose memory host processes mostly hold: "
        "not counted as free"
    )


class SummaryOut(BaseModel):
    """GET /api/v1/summary: the cluster at a glance."""

    mode: str = Field(description="basic | time-slicing | mps | mixed (GPU nodes differ) | unknown")
    replicas: int = Field(description="Slots per GPU of the cluster-wide plugin config")
    resource: str = Field(description="Advertised resource name, e.g. nvidia.com/gpu")
    plugin: PluginState = Field(description="The device-plugin DaemonSet and its config")
    resources: dict[str, ResourceState] = Field(
        description="Every GPU resource in the cluster: allocatable, requested, free, stranded"
    )
    totals: Totals = Field(description="Device-plugin slots (DRA devices are in `dra`)")
    dra: DraSummary = Field(description="Devices handed out by Dynamic Resource Allocation")
    pending_demand: list[PendingDemand] = Field(
        description="Unscheduled pods wanting GPU resources, per resource, with the reason"
    )
    free_gpus: list[FreeGpusOut] = Field(
        default_factory=list, description="Free whole GPUs and free shares, by GPU model"
    )
    findings: dict[str, int] = Field(description="Finding counts by severity")
    stale: bool = Field(
        description="True while the API server cannot be reached or a snapshot build fails"
    )
    stale_age_s: float | None = Field(description="Seconds the served snapshot has been stale")
    stale_reason: str | None = Field(default=None, description="Why the snapshot is stale")
    generated_at: datetime = Field(description=_GENERATED_AT)


class NodesOut(BaseModel):
    """GET /api/v1/nodes: every node's accounting next to its reality."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    nodes: list[NodeState] | list[NodeSummaryOut] = Field(
        description="The nodes, GPU nodes and others, by name: every node without `limit`, "
        "at most `limit` with it; the full view of each (at most 64 DRA devices, "
        "`dra_devices_omitted` counts the rest) unless `fields=summary`, the default of a "
        "paged list"
    )
    continue_: str | None = Field(
        default=None,
        serialization_alias="continue",
        description="Pass as `continue` (with the same `limit`) for the next page; null on "
        "the last page and on an unpaged list",
    )
    remaining: int = Field(
        default=0, description="How many nodes follow this page (0 on the last page)"
    )


class NodeOut(BaseModel):
    """GET /api/v1/nodes/{name}: one node, its GPUs (with their health) and its findings."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    node: NodeState = Field(
        description="The node; at most 64 DRA devices listed (`dra_devices_omitted` counts "
        "the rest, GET /api/v1/nodes/{name}/dra-devices pages them)"
    )


class FindingsOut(BaseModel):
    """GET /api/v1/findings: the findings, worst first, filtered as asked."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    findings: list[Finding] = Field(description="Matching findings, worst first, then by node")
    total: int = Field(description="Findings matching the filters, on every page")


class NodeDraDevicesOut(BaseModel):
    """GET /api/v1/nodes/{name}/dra-devices: a node's DRA devices, a page at a time."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    node: str = Field(description="The node's name")
    devices: list[NodeDraDeviceOut] = Field(
        description="This page's devices: the node's GPUs in order, then GPUs no agent reported"
    )
    total: int = Field(description="The node's DRA devices, on every page")
    held: int = Field(description="Of those, devices at least one claim holds")


class ReportAcceptedOut(BaseModel):
    """POST /api/v1/agent/reports: the report was taken."""

    status: Literal["stored", "duplicate"] = Field(
        description="stored: the node's newest report now; duplicate: one collected at the "
        "same time or later is already kept"
    )
    node: str = Field(description="The node the report is of")


class ProblemOut(BaseModel):
    """Every error body: a sentence a person can act on."""

    detail: str = Field(description="What went wrong and what to do (English)")


class ReadyOut(BaseModel):
    """GET /readyz: whether this replica can serve."""

    status: Literal["ok", "degraded", "starting"] = Field(
        description="ok; degraded (still 200): serving a stale snapshot; starting (503)"
    )
    reason: str = Field(description="Why it is not ok, in words; empty when ok")
    stale_age_s: float | None = Field(
        default=None, description="Seconds the served snapshot has been stale"
    )
    reports: str | None = Field(
        default=None,
        description="Where this replica's agent reports came from (its peers, or one report "
        "interval of the agents), or what it still waits for",
    )
