"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.web.deps import RuntimeDep
from app.web.views.metrics import CONTENT_TYPE, render_metrics
from app.web.views.schemas import ReadyOut

router = APIRouter(tags=["operations"])  # probes: open to all
metrics_router = APIRouter(tags=["operations"])  # behind app.web.auth.guards.require_metrics


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is alive (it does not look at the cluster)."""
    return {"status": "ok"}


@router.get("/readyz", response_model=ReadyOut, responses={503: {"model": ReadyOut}})
async def readyz(runtime: RuntimeDep, response: Response) -> ReadyOut:
    """Ready once a snapshot exists and every node's latest report is here (`reports` says
    from where); `degraded` (still 200) while serving a stale one."""
    readiness = runtime.snapshots.readiness()
    snapshot = runtime.snapshots.current()
    sync = runtime.peers.state()
    if not readiness.ready:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        return ReadyOut(status="starting", reason=readiness.reason, reports=sync.how)
    if not sync.done:  # not every node's latest report yet (app.web.routes.peers)
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        return ReadyOut(status="starting", reason=sync.how, reports=sync.how)
    return ReadyOut(
        status="degraded" if readiness.degraded else "ok",
        reason=readiness.reason,
        stale_age_s=snapshot.stale_age_s if snapshot else None,
        reports=sync.how,
    )


@metrics_router.get("/metrics", response_class=Response)
async def metrics(runtime: RuntimeDep) -> Response:
    """Slots and findings per node in the Prometheus text format."""
    body = runtime.snapshots.metrics_text.memo("metrics", render_metrics)
    if body is None:
        return Response("# no snapshot yet\n", media_type=CONTENT_TYPE)
    return Response(body + runtime.history.metrics_text(), media_type=CONTENT_TYPE)
