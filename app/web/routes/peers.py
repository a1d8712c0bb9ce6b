"""GET /api/v1/peer/reports: what a starting replica asks its peers for.

The asking side is app.web.services.reports.sync.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Response, status

from app.web.auth.tokens import bearer_matches
from app.web.deps import RuntimeDep
from app.web.services.reports.sync import PeerReportsOut, peer_token

router = APIRouter(prefix="/api/v1/peer", tags=["replicas"], include_in_schema=False)


@router.get("/reports", response_model=PeerReportsOut)
async def peer_reports(
    runtime: RuntimeDep,
    authorization: Annotated[str | None, Header()] = None,
) -> Response:
    """Every node's latest report as this replica holds it (for a starting peer)."""
    if not bearer_matches(authorization, peer_token(runtime.settings)):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "Peer token missing or wrong (derived from GEO_MLOPS_SESSION_SECRET).",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not runtime.peers.state().done:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "This replica is still gathering reports itself.",
            headers={"Retry-After": "2"},
        )
    body = PeerReportsOut(reports=list(runtime.reports.latest().values()))
    return Response(body.model_dump_json().encode(), media_type="application/json")
