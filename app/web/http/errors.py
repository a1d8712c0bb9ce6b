"""Our errors as HTTP: the status each refusal or cluster failure is answered with.

The services raise PlanRefused, ClusterError and WritesDisabledError; the JSON API lets
them through to the handlers here (`{"detail": ...}`), the pages word them per language
with the same status codes.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse

from app.domain.changes.models import PlanRefused, RefusalCode
from app.errors import (
    ClusterError,
    ClusterUnavailableError,
    ConflictError,
    ForbiddenError,
    InvalidObjectError,
    NotFoundError,
    WritesDisabledError,
)
from app.i18n.translate import CATALOGS
from app.kube.writer import ApplyFailed
from app.web.http.language import language_of
from app.web.views.refusal_text import refusal_text
from app.web.views.schemas import ProblemOut

_REFUSAL_STATUS = {
    RefusalCode.DAEMONSET_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    RefusalCode.NO_PREVIOUS: status.HTTP_404_NOT_FOUND,
    RefusalCode.OUT_OF_RANGE: status.HTTP_422_UNPROCESSABLE_CONTENT,
    RefusalCode.NODE_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    RefusalCode.CHANGE_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    RefusalCode.UNKNOWN_GPU: status.HTTP_422_UNPROCESSABLE_CONTENT,
    RefusalCode.BAD_TOKEN: status.HTTP_422_UNPROCESSABLE_CONTENT,
    RefusalCode.TOKEN_REQUIRED: status.HTTP_428_PRECONDITION_REQUIRED,
}
_CLUSTER_STATUS = (
    (ConflictError, status.HTTP_409_CONFLICT),
    (NotFoundError, status.HTTP_404_NOT_FOUND),
    (ForbiddenError, status.HTTP_403_FORBIDDEN),
    (InvalidObjectError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (ClusterUnavailableError, status.HTTP_503_SERVICE_UNAVAILABLE),
)


def problem(description: str) -> dict[str, Any]:
    """An error answer as the OpenAPI document describes it."""
    return {"model": ProblemOut, "description": description}


WRITE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: problem("The body cannot be read as text (not UTF-8); JSON that is not valid is a 422"),
    401: problem("No or wrong credentials"),
    403: problem("Not an admin, missing CSRF token, or RBAC refused"),
    404: problem("DaemonSet (or the previous config) not found"),
    409: problem("Changed since the preview, or the DaemonSet cannot be edited"),
    422: problem(
        "Values out of range, a bad preview token, malformed JSON (the detail says the line "
        "and column), or an old and a new spelling of one key with different values"
    ),
    428: problem(
        "An apply without the preview's token (`expectedToken`): preview first with "
        "`?dryRun=true`, or ask for a blind write with `?force=true`"
    ),
    429: problem("Too many failed authentications from this address"),
    502: problem("A write failed; the detail says which state the cluster is in"),
    503: problem("API server unreachable, or writes not enabled"),
}
# the reads of a node's split and of the change history (one table since the first version)
SPLIT_READ_ERRORS: dict[int | str, dict[str, Any]] = {
    401: problem("Reads need a login"),
    404: problem("No such node, or the plugin DaemonSet is not found"),
    409: problem("The node's GPUs are not known yet (no agent report)"),
    502: problem("The API server answered with an error"),
    503: problem("API server unreachable, or writes (and their history) not enabled"),
}


def refusal_status(refused: PlanRefused) -> int:
    return _REFUSAL_STATUS.get(refused.code, status.HTTP_409_CONFLICT)


def cluster_status(error: ClusterError) -> int:
    cause = error.cause if isinstance(error, ApplyFailed) else error
    for kind, code in _CLUSTER_STATUS:
        if isinstance(cause, kind):
            return code
    return status.HTTP_502_BAD_GATEWAY


def add_error_handlers(app: FastAPI) -> None:
    """Answer a refused or failed change that reaches the app with its status and detail."""

    @app.exception_handler(PlanRefused)
    async def refused(request: Request, exc: PlanRefused) -> JSONResponse:
        detail = refusal_text(exc, language_of(request))
        return JSONResponse({"detail": detail}, status_code=refusal_status(exc))

    @app.exception_handler(ClusterError)
    async def failed(_: Request, exc: ClusterError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=cluster_status(exc))

    @app.exception_handler(WritesDisabledError)
    async def disabled(request: Request, _: WritesDisabledError) -> JSONResponse:
        detail = CATALOGS[language_of(request)]["gpus_no_writes"]
        return JSONResponse({"detail": detail}, status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
