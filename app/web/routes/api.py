"""The read-only JSON API under /api/v1, served from the current snapshot (no cluster calls)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status

from app.domain.accounting.free_gpus import free_by_model
from app.domain.snapshot import NodeState, Severity, Snapshot
from app.web.deps import RuntimeDep, SnapshotDep
from app.web.i18n.translate import language_of
from app.web.runtime import Runtime
from app.web.views.finding_text import worded
from app.web.views.node_json import (
    DEFAULT_DRA_DEVICES_PAGE,
    MAX_DRA_DEVICES_PAGE,
    capped,
    node_dra_devices,
)
from app.web.views.schemas import (
    FindingsOut,
    FreeGpusOut,
    NodeDraDevicesOut,
    NodeOut,
    NodesOut,
    ProblemOut,
    SummaryOut,
)

router = APIRouter(prefix="/api/v1", tags=["read"])

JSON = "application/json"
NOT_READY: dict[int | str, dict[str, Any]] = {
    503: {"model": ProblemOut, "description": "No snapshot yet"}
}


def summary_of(snapshot: Snapshot, *, stale_reason: str | None = None) -> SummaryOut:
    plugin = snapshot.plugin
    return SummaryOut(
        mode=snapshot.mode,
        replicas=plugin.replicas,
        resource=plugin.resource,
        plugin=plugin,
        resources=snapshot.resources,
        totals=snapshot.totals,
        dra=snapshot.dra,
        pending_demand=snapshot.pending_demand,
        free_gpus=[
            FreeGpusOut.model_validate(dataclasses.asdict(entry))
            for entry in free_by_model(snapshot.nodes)
        ],
        findings=snapshot.severity_counts(),
        stale=snapshot.stale,
        stale_age_s=snapshot.stale_age_s,
        stale_reason=stale_reason if snapshot.stale else None,
        generated_at=snapshot.generated_at,
    )


def _reason(runtime: Runtime, snapshot: Snapshot) -> str | None:
    return runtime.snapshots.stale_reason if snapshot.stale else None


@router.get("/summary", response_model=SummaryOut, responses=NOT_READY)
async def get_summary(runtime: RuntimeDep, snapshot: SnapshotDep) -> Response:
    """Mode, plugin state, cluster totals and finding counts."""
    body = runtime.snapshots.json_bodies.memo(
        "summary",
        lambda s: summary_of(s, stale_reason=_reason(runtime, s)).model_dump_json().encode(),
    )
    return Response(body, media_type=JSON)


@router.get("/nodes", response_model=NodesOut, responses=NOT_READY)
async def list_nodes(runtime: RuntimeDep, snapshot: SnapshotDep) -> Response:
    """Every node with its figures, GPUs and findings (at most 64 DRA devices a node)."""
    body = runtime.snapshots.json_bodies.memo(
        "nodes",
        lambda s: (
            NodesOut(
                generated_at=s.generated_at,
                stale=s.stale,
                stale_reason=_reason(runtime, s),
                nodes=[capped(_worded(node)) for node in s.nodes],
            )
            .model_dump_json()
            .encode()
        ),
    )
    return Response(body, media_type=JSON)


@router.get(
    "/nodes/{name}",
    response_model=NodeOut,
    responses={404: {"model": ProblemOut, "description": "No such node"}, **NOT_READY},
)
async def get_node(
    name: Annotated[str, Path(max_length=253)], runtime: RuntimeDep, snapshot: SnapshotDep
) -> NodeOut:
    """One node with its figures, GPUs, processes and findings (at most 64 DRA devices:
    `dra_devices_omitted` counts the rest, its `/dra-devices` pages them)."""
    return NodeOut(
        generated_at=snapshot.generated_at,
        stale=snapshot.stale,
        stale_reason=_reason(runtime, snapshot),
        node=capped(_worded(_node(snapshot, name))),
    )


def _worded(node: NodeState) -> NodeState:
    """The node with its findings' titles worded (in English: the node answers are cached)."""
    return node.model_copy(update={"findings": [worded(f, "en") for f in node.findings]})


def _node(snapshot: Snapshot, name: str) -> NodeState:
    for node in snapshot.nodes:
        if node.name == name:
            return node
    raise HTTPException(status.HTTP_404_NOT_FOUND, f"No node named {name!r} in the cluster.")


@router.get(
    "/nodes/{name}/dra-devices",
    response_model=NodeDraDevicesOut,
    responses={404: {"model": ProblemOut, "description": "No such node"}, **NOT_READY},
)
async def list_node_dra_devices(
    name: Annotated[str, Path(max_length=253)],
    runtime: RuntimeDep,
    snapshot: SnapshotDep,
    limit: Annotated[
        int, Query(ge=1, le=MAX_DRA_DEVICES_PAGE, description="At most this many devices")
    ] = DEFAULT_DRA_DEVICES_PAGE,
    offset: Annotated[int, Query(ge=0, le=10_000_000, description="Skip this many first")] = 0,
) -> NodeDraDevicesOut:
    """A node's DRA devices with the claims holding them, a page at a time (`total` counts
    them all: a driver publishing every MIG placement lists thousands on one node)."""
    devices = node_dra_devices(_node(snapshot, name))
    return NodeDraDevicesOut(
        generated_at=snapshot.generated_at,
        stale=snapshot.stale,
        stale_reason=_reason(runtime, snapshot),
        node=name,
        devices=devices[offset : offset + limit],
        total=len(devices),
        held=len([d for d in devices if d.device.claims]),
    )


DEFAULT_FINDINGS_PAGE = 1000
MAX_FINDINGS_PAGE = 5000


@router.get("/findings", response_model=FindingsOut, responses=NOT_READY)
async def list_findings(
    request: Request,
    runtime: RuntimeDep,
    snapshot: SnapshotDep,
    severity: Annotated[Severity | None, Query(description="Only this severity")] = None,
    node: Annotated[
        str | None, Query(max_length=253, description="Only findings of this node")
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_FINDINGS_PAGE, description="At most this many findings")
    ] = DEFAULT_FINDINGS_PAGE,
    offset: Annotated[int, Query(ge=0, le=10_000_000, description="Skip this many first")] = 0,
) -> FindingsOut:
    """Findings, most severe first, optionally filtered by severity and node, a page at a time
    (`total` counts them all: a cluster of hostile objects cannot make one answer huge).
    Titles are in the language asked for (`?lang=`, the `lang` cookie, Accept-Language)."""
    lang = language_of(request)
    findings = [
        finding
        for finding in snapshot.findings
        if (severity is None or finding.severity == severity)
        and (node is None or finding.node == node)
    ]
    return FindingsOut(
        generated_at=snapshot.generated_at,
        stale=snapshot.stale,
        stale_reason=_reason(runtime, snapshot),
        findings=[worded(f, lang) for f in findings[offset : offset + limit]],
        total=len(findings),
    )
