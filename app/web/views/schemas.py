"""Response shapes of the JSON API, named by role; node and GPU shapes are the snapshot's own."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from app.domain.described import Described
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


class HostHeldGpuOut(Described):
    """A GPU Kubernetes counts as free whose memory host processes mostly hold."""

    node: str
    """The node holding the GPU"""
    index: int
    """The GPU's index on its node"""
    memory_host_mib: int
    """Memory host processes use on this GPU"""
    memory_total_mib: int
    """The GPU's total memory, MiB"""


class FreeGpusOut(Described):
    """Free GPUs of one model: whole GPUs apart from shares (time-slices, MPS, MIG slices)."""

    model: str
    """GPU model, e.g. NVIDIA A100-SXM4-80GB"""
    whole: int
    """Free whole GPUs: one slot each, nothing held, schedulable"""
    shares: int
    """Free shares of GPUs (time-slices, MPS shares, MIG slices)"""
    nodes: list[str]
    """Nodes with a free whole GPU or share of this model"""
    host_held: list[HostHeldGpuOut]
    """GPUs Kubernetes counts as free whose memory host processes mostly hold: not counted as free
    """


class SummaryOut(Described):
    """GET /api/v1/summary: the cluster at a glance."""

    mode: str
    """basic | time-slicing | mps | mixed (GPU nodes differ) | unknown"""
    replicas: int
    """Slots per GPU of the cluster-wide plugin config"""
    resource: str
    """Advertised resource name, e.g. nvidia.com/gpu"""
    plugin: PluginState
    """The device-plugin DaemonSet and its config"""
    resources: dict[str, ResourceState]
    """Every GPU resource in the cluster: allocatable, requested, free, stranded"""
    totals: Totals
    """Device-plugin slots (DRA devices are in `dra`)"""
    dra: DraSummary
    """Devices handed out by Dynamic Resource Allocation"""
    pending_demand: list[PendingDemand]
    """Unscheduled pods wanting GPU resources, per resource, with the reason"""
    free_gpus: list[FreeGpusOut] = Field(default_factory=list)
    """Free whole GPUs and free shares, by GPU model"""
    findings: dict[str, int]
    """Finding counts by severity"""
    stale: bool
    """True while the API server cannot be reached or a snapshot build fails"""
    stale_age_s: float | None
    """Seconds the served snapshot has been stale"""
    stale_reason: str | None = None
    """Why the snapshot is stale"""
    generated_at: datetime = Field(description=_GENERATED_AT)


class NodesOut(Described):
    """GET /api/v1/nodes: every node's accounting next to its reality."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    nodes: list[NodeState] | list[NodeSummaryOut]
    """The nodes, GPU nodes and others, by name: every node without `limit`, at most `limit` with
    it; the full view of each (at most 64 DRA devices, `dra_devices_omitted` counts the rest)
    unless `fields=summary`, the default of a paged list"""
    continue_: str | None = Field(default=None, serialization_alias="continue")
    """Pass as `continue` (with the same `limit`) for the next page; null on the last page and on an
    unpaged list"""
    remaining: int = 0
    """How many nodes follow this page (0 on the last page)"""


class NodeOut(Described):
    """GET /api/v1/nodes/{name}: one node, its GPUs (with their health) and its findings."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    node: NodeState
    """The node; at most 64 DRA devices listed (`dra_devices_omitted` counts the rest, GET
    /api/v1/nodes/{name}/dra-devices pages them)"""


class FindingsOut(Described):
    """GET /api/v1/findings: the findings, worst first, filtered as asked."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    findings: list[Finding]
    """Matching findings, worst first, then by node"""
    total: int
    """Findings matching the filters, on every page"""


class NodeDraDevicesOut(Described):
    """GET /api/v1/nodes/{name}/dra-devices: a node's DRA devices, a page at a time."""

    generated_at: datetime = Field(description=_GENERATED_AT)
    stale: bool = Field(description=_STALE)
    stale_reason: str | None = Field(default=None, description=_STALE_REASON)
    node: str
    """The node's name"""
    devices: list[NodeDraDeviceOut]
    """This page's devices: the node's GPUs in order, then GPUs no agent reported"""
    total: int
    """The node's DRA devices, on every page"""
    held: int
    """Of those, devices at least one claim holds"""


class ReportAcceptedOut(Described):
    """POST /api/v1/agent/reports: the report was taken."""

    status: Literal["stored", "duplicate"]
    """stored: the node's newest report now; duplicate: one collected at the same time or later is
    already kept"""
    node: str
    """The node the report is of"""


class ProblemOut(Described):
    """Every error body: a sentence a person can act on."""

    detail: str
    """What went wrong and what to do (English)"""


class ReadyOut(Described):
    """GET /readyz: whether this replica can serve."""

    status: Literal["ok", "degraded", "starting"]
    """ok; degraded (still 200): serving a stale snapshot; starting (503)"""
    reason: str
    """Why it is not ok, in words; empty when ok"""
    stale_age_s: float | None = None
    """Seconds the served snapshot has been stale"""
    reports: str | None = None
    """Where this replica's agent reports came from (its peers, or one report interval of the
    agents), or what it still waits for"""
