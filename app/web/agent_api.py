"""POST /api/v1/agent/reports: where node agents deliver what their GPUs really do."""

from __future__ import annotations

import hmac
import logging
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Request, Response, status
from pydantic import ValidationError

from app.domain.report import AgentReport
from app.web.deps import RuntimeDep
from app.web.problems import describe_errors
from app.web.reports import Outcome
from app.web.schemas import ProblemOut, ReportAcceptedOut

router = APIRouter(prefix="/api/v1/agent", tags=["agent"])
log = logging.getLogger(__name__)


def bearer_matches(authorization: str | None, expected: str | None) -> bool:
    """Constant-time check of an `Authorization: Bearer <token>` header."""
    if not expected or not authorization:
        return False
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())


@router.post(
    "/reports",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=ReportAcceptedOut,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/AgentReport"}}
            },
        }
    },
    responses={
        200: {"model": ReportAcceptedOut, "description": "Same report already stored"},
        401: {"model": ProblemOut, "description": "Missing or wrong agent token"},
        409: {"model": ProblemOut, "description": "A newer report of this node is stored"},
        413: {"model": ProblemOut, "description": "Report larger than the limit"},
        422: {"model": ProblemOut, "description": "Report does not match schema 1"},
    },
)
async def post_report(
    request: Request,
    response: Response,
    runtime: RuntimeDep,
    authorization: Annotated[str | None, Header()] = None,
) -> ReportAcceptedOut:
    """Store an agent report if it is authentic, valid and newer than the stored one."""
    if not bearer_matches(authorization, runtime.settings.read_agent_token()):
        log.warning("agent report refused: bad token", extra={"client": _client(request)})
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "Missing or wrong agent token (Authorization: Bearer <token>).",
            headers={"WWW-Authenticate": "Bearer"},
        )
    limit = runtime.settings.max_report_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, _too_large(limit))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, _too_large(limit))
    try:
        report = AgentReport.model_validate_json(bytes(body))
    except ValidationError as exc:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, describe_errors("Invalid report", exc.errors())
        ) from exc
    outcome = runtime.reports.accept(report, received_at=runtime.clock())
    if outcome is Outcome.OUT_OF_ORDER:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"A newer report of node {report.node!r} is already stored; this one is ignored.",
        )
    if outcome is Outcome.DUPLICATE:
        response.status_code = status.HTTP_200_OK
        return ReportAcceptedOut(status="duplicate", node=report.node)
    runtime.snapshots.poke()
    return ReportAcceptedOut(status="stored", node=report.node)


def _too_large(limit: int) -> str:
    return f"Report larger than {limit} bytes (GEO_MLOPS_MAX_REPORT_BYTES)."


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"
