"""The read-only JSON API under /api/v1, served from the current snapshot (no cluster calls)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status
from pydantic_core import to_json

from app.domain.accounting.free_gpus import FreeByModel
from app.domain.snapshot import NodeState, Severity, Snapshot
from app.web.deps import RuntimeDep, SnapshotDep
from app.web.http.language import language_of
from app.web.runtime import Runtime
from app.web.views.finding_text import worded
from app.web.views.node_json import (
    DEFAULT_DRA_DEVICES_PAGE,
    MAX_DRA_DEVICES_PAGE,
    capped,
    node_dra_devices,
)
from app.web.views.node_list import (
    DEFAULT_NODES_PAGE,
    MAX_CONTINUE_CHARS,
    MAX_NODES_PAGE,
    Fields,
    InvalidContinue,
    NodesPage,
    NodeSummaryOut,
    find_node,
    node_summary,
    nodes_page,
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


def summary_of(
    snapshot: Snapshot, *, free: list[FreeByModel], stale_reason: str | None = None
) -> SummaryOut:
    """The summary of `snapshot`; `free` is its free GPUs per model
    (`SnapshotService.free_gpus`)."""
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
        free_gpus=[FreeGpusOut.model_validate(dataclasses.asdict(entry)) for entry in free],
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
        lambda s: (
            summary_of(s, free=runtime.snapshots.free_gpus(s), stale_reason=_reason(runtime, s))
            .model_dump_json()
            .encode()
        ),
    )
    return Response(body, media_type=JSON)


@router.get("/nodes", response_model=NodesOut, responses=NOT_READY)
async def list_nodes(
    runtime: RuntimeDep,
    snapshot: SnapshotDep,
    limit: Annotated[
        int | None,
        Query(ge=1, le=MAX_NODES_PAGE, description="At most this many nodes (none: every node)"),
    ] = None,
    continue_: Annotated[
        str | None,
        Query(
            alias="continue",
            max_length=MAX_CONTINUE_CHARS,
            description="The `continue` of the previous page",
        ),
    ] = None,
    fields: Annotated[
        Fields | None,
        Query(description="summary | full; default: summary when paged, full when not"),
    ] = None,
) -> Response:
    """The nodes with their figures, a page at a time with `limit` and `continue` (as the
    Kubernetes API lists); every node with its GPUs and findings without `limit`."""
    paged = limit is not None or continue_ is not None
    shown: Fields = fields or ("summary" if paged else "full")
    key = f"nodes?limit={limit}&fields={shown}" if paged else f"nodes?fields={shown}"
    if continue_ is None and limit in (None, DEFAULT_NODES_PAGE):
        # the whole lists and the default first pages: rendered once per snapshot (and
        # ahead of requests); a key per `limit` would let a reader make every build
        # render a thousand pages
        body = runtime.snapshots.json_bodies.memo(
            key, lambda s: _nodes_body(runtime, s, limit=limit, token=None, fields=shown)
        )
    else:  # other pages are cheap and many: rendered when asked for
        try:
            body = _nodes_body(runtime, snapshot, limit=limit, token=continue_, fields=shown)
        except InvalidContinue as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    return Response(body, media_type=JSON)


def _nodes_body(
    runtime: Runtime, snapshot: Snapshot, *, limit: int | None, token: str | None, fields: Fields
) -> bytes:
    page = nodes_page(snapshot.nodes, limit=limit or DEFAULT_NODES_PAGE, token=token)
    if limit is None and token is None:
        page = NodesPage(snapshot.nodes, None, 0)
    nodes: list[NodeState] | list[NodeSummaryOut] = (
        [node_summary(node) for node in page.nodes]
        if fields == "summary"
        else [capped(_worded(node)) for node in page.nodes]
    )
    answer = NodesOut(
        generated_at=snapshot.generated_at,
        stale=snapshot.stale,
        stale_reason=_reason(runtime, snapshot),
        nodes=nodes,
        continue_=page.next_token,
        remaining=page.remaining,
    )
    return to_json(answer, by_alias=True)  # bytes at once: the whole list is ~10 KB a node


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
    """The node with its findings' titles worded (in English: the node answers are cached);
    a node without findings as it is (most nodes: no copy)."""
    if not node.findings:
        return node
    return node.model_copy(update={"findings": [worded(f, "en") for f in node.findings]})


def _node(snapshot: Snapshot, name: str) -> NodeState:
    found = find_node(snapshot.nodes, name)
    if found is not None:
        return found
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
