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


class SummaryOut(BaseModel):
    """GET /api/v1/summary: the cluster at a glance."""

    mode: str = Field(description="basic | time-slicing | mps | mixed (GPU nodes differ) | unknown")
    replicas: int
    resource: str = Field(description="Advertised resource name, e.g. nvidia.com/gpu")
    plugin: PluginState
    resources: dict[str, ResourceState] = Field(
        description="Every GPU resource in the cluster: allocatable, requested, free, stranded"
    )
    totals: Totals = Field(description="Device-plugin slots (DRA devices are in `dra`)")
    dra: DraSummary = Field(description="Devices handed out by Dynamic Resource Allocation")
    pending_demand: list[PendingDemand] = Field(
        description="Unscheduled pods wanting GPU resources, per resource, with the reason"
    )
    findings: dict[str, int] = Field(description="Finding counts by severity")
    stale: bool = Field(
        description="True while the API server cannot be reached or a snapshot build fails"
    )
    stale_age_s: float | None = Field(description="Seconds the served snapshot has been stale")
    stale_reason: str | None = Field(default=None, description="Why the snapshot is stale")
    generated_at: datetime


class NodesOut(BaseModel):
    generated_at: datetime
    stale: bool
    stale_reason: str | None = None
    nodes: list[NodeState]


class NodeOut(BaseModel):
    generated_at: datetime
    stale: bool
    stale_reason: str | None = None
    node: NodeState


class FindingsOut(BaseModel):
    generated_at: datetime
    stale: bool
    stale_reason: str | None = None
    findings: list[Finding]
    total: int = Field(description="Findings matching the filters, on every page")


class ReportAcceptedOut(BaseModel):
    status: Literal["stored", "duplicate"]
    node: str


class ProblemOut(BaseModel):
    """Every error body: a sentence a person can act on."""

    detail: str


class ReadyOut(BaseModel):
    status: Literal["ok", "degraded", "starting"]
    reason: str
    stale_age_s: float | None = None
    # Where this replica's agent reports came from (its peers, or one report interval of
    # the agents), or what it still waits for.
    reports: str | None = None
