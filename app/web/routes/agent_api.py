"""POST /api/v1/agent/reports: where node agents deliver what their GPUs really do."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Request, Response, status
from starlette.routing import Route

from app.web.auth.agent_auth import AgentIdentity, AgentRefused
from app.web.auth.tokens import bearer_token
from app.web.deps import RuntimeDep
from app.web.http.problems import describe_errors
from app.web.runtime import Runtime
from app.web.services.reports.intake import ReportRefused
from app.web.services.reports.store import Outcome
from app.web.views.schemas import ProblemOut, ReportAcceptedOut

router = APIRouter(prefix="/api/v1/agent", tags=["agent"])
log = logging.getLogger(__name__)
PATH = "/reports"


async def take_report(request: Request) -> Response:
    """The report POST as served: a plain route, matched before the documented one below,
    without FastAPI's dependency solving and response-model encoding (docs/PERFORMANCE.md).
    The rules are the same ones (`_take`); refusals are the same HTTPExceptions.
    """
    runtime: Runtime = request.app.state.runtime
    code, accepted = await _take(request, runtime, request.headers.get("authorization"))
    return Response(accepted.model_dump_json(), code, media_type="application/json")


# The app lists it first (app.web.app); the documented route below stays in OpenAPI.
plain_route = Route(router.prefix + PATH, take_report, methods=["POST"], include_in_schema=False)


@router.post(
    PATH,
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
        403: {"model": ProblemOut, "description": "The token belongs to another node"},
        409: {"model": ProblemOut, "description": "A newer report of this node is stored"},
        413: {"model": ProblemOut, "description": "Report larger than the limit"},
        422: {
            "model": ProblemOut,
            "description": "Report does not match schema 1, or is dated in the future",
        },
        503: {"model": ProblemOut, "description": "The agent token cannot be checked now"},
    },
)
async def post_report(
    request: Request,
    response: Response,
    runtime: RuntimeDep,
    authorization: Annotated[str | None, Header()] = None,
) -> ReportAcceptedOut:
    """Store an agent report if it is authentic, for the agent's node, valid and newer."""
    response.status_code, accepted = await _take(request, runtime, authorization)
    return accepted


async def _take(
    request: Request, runtime: Runtime, authorization: str | None
) -> tuple[int, ReportAcceptedOut]:
    """The answer's status and body to one report POST; raises HTTPException for refusals."""
    identity = await _identify(request, runtime, authorization)
    intake = runtime.intake
    try:
        intake.check_declared(request.headers.get("content-length"))
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            intake.check_size(len(body))
        taken = intake.take(bytes(body), token_node=identity.node, client=_client(request))
    except ReportRefused as refused:
        detail = refused.message
        if refused.errors is not None:
            detail = describe_errors(refused.message, refused.errors)
        raise HTTPException(refused.status_code, detail) from refused
    if taken.outcome is Outcome.DUPLICATE:
        return status.HTTP_200_OK, ReportAcceptedOut(status="duplicate", node=taken.node)
    return status.HTTP_202_ACCEPTED, ReportAcceptedOut(status="stored", node=taken.node)


async def _identify(request: Request, runtime: Runtime, authorization: str | None) -> AgentIdentity:
    """The agent behind the token (off the event loop when a TokenReview may be needed)."""
    token = bearer_token(authorization)
    try:
        found = runtime.agents.without_review(token)
        if found is None:
            assert token is not None
            found = await runtime.agents.review_in_pool(token)
        return found
    except AgentRefused as refused:
        log.warning("agent report refused: %s", refused.message, extra={"client": _client(request)})
        headers = {"WWW-Authenticate": "Bearer"} if refused.status_code == 401 else None
        raise HTTPException(refused.status_code, refused.message, headers=headers) from refused


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"
