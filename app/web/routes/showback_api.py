"""`GET /api/v1/showback` (GPU-hours per namespace, owner or node, JSON or CSV) and
`GET /api/v1/nodes/{name}/holders?at=` (who held each GPU of a node at a moment)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status

from app.domain.history.window import as_by, window_refusal
from app.errors import HistoryUnavailableError
from app.web.deps import RuntimeDep
from app.web.i18n.translate import Translator, language_of
from app.web.views.history_views import (
    HoldersOut,
    ShowbackOut,
    holders_out,
    showback_csv,
    showback_out,
)
from app.web.views.schemas import ProblemOut

router = APIRouter(prefix="/api/v1", tags=["read"])

DEFAULT_WINDOW = timedelta(hours=24)
REFUSED: dict[int | str, dict[str, Any]] = {
    422: {"model": ProblemOut, "description": "A window or grouping that cannot be answered"},
    503: {"model": ProblemOut, "description": "No history is kept, or it cannot be read now"},
}


def unavailable(request: Request, exc: HistoryUnavailableError) -> HTTPException:
    """503 with what is unavailable and why, in the request's language."""
    t = Translator(language_of(request))
    return HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, t(exc.code, detail=exc.detail))


@router.get(
    "/showback",
    response_model=ShowbackOut,
    responses={**REFUSED, 200: {"content": {"text/csv": {}}}},
)
def get_showback(
    request: Request,
    runtime: RuntimeDep,
    start: Annotated[
        datetime | None, Query(alias="from", description="RFC 3339; default: `to` - 24 h")
    ] = None,
    end: Annotated[datetime | None, Query(alias="to", description="RFC 3339; default: now")] = None,
    by: Annotated[str, Query(description="namespace | owner | node")] = "namespace",
    answer_format: Annotated[
        Literal["json", "csv"], Query(alias="format", description="json or csv")
    ] = "json",
) -> ShowbackOut | Response:
    """GPU-hours per namespace, owner or node over a window: the physical GPU share held
    times hours, with the used and idle parts; the rows add up to `totals.gpuHours`, which
    never exceeds the physical GPU-hours."""
    history = runtime.history
    end = end or history.now()
    start = start or end - DEFAULT_WINDOW
    refusal = window_refusal(
        start, end, by, now=history.now(), retention_days=history.retention_days
    )
    if refusal is not None:
        t = Translator(language_of(request))
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, t(refusal.code, **refusal.params)
        )
    try:
        result = history.showback(start, end, as_by(by))
    except HistoryUnavailableError as exc:
        raise unavailable(request, exc) from exc
    if answer_format == "csv":
        return Response(
            showback_csv(result),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="showback-{by}.csv"'},
        )
    return showback_out(result, start=start, end=end)


@router.get("/nodes/{name}/holders", response_model=HoldersOut, responses=REFUSED)
def get_holders(
    request: Request,
    runtime: RuntimeDep,
    name: Annotated[str, Path(max_length=253)],
    at: Annotated[datetime, Query(description="RFC 3339 moment")],
) -> HoldersOut:
    """Per GPU of the node at `at`: the pods that held it, their slots, and the plugin
    config (mode, replicas, its source) in force then."""
    history = runtime.history
    if at.tzinfo is None:
        t = Translator(language_of(request))
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, t("history.time-without-zone"))
    try:
        found = history.holders(name, at)
    except HistoryUnavailableError as exc:
        raise unavailable(request, exc) from exc
    return holders_out(name, at, history.engine, [(item.gpu, item.holds) for item in found])
