"""`GET /api/v1/showback` (GPU-hours per namespace, owner or node, JSON or CSV) and
`GET /api/v1/nodes/{name}/holders?at=` (who held each GPU of a node at a moment)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status

from app.domain.history.window import as_by, window_refusal
from app.errors import HistoryUnavailableError
from app.i18n.translate import Translator
from app.web.deps import RuntimeDep
from app.web.http.language import language_of
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
# RFC 3339 as the schema says it (a zone is asked for by the route, with its own words)
MOMENT = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([Zz]|[+-]\d{2}:\d{2})?$"
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
        str | None,
        Query(alias="from", pattern=MOMENT, description="RFC 3339; default: `to` - 24 h"),
    ] = None,
    end: Annotated[
        str | None, Query(alias="to", pattern=MOMENT, description="RFC 3339; default: now")
    ] = None,
    by: Annotated[str, Query(description="namespace | owner | node")] = "namespace",
    answer_format: Annotated[
        Literal["json", "csv"], Query(alias="format", description="json or csv")
    ] = "json",
) -> ShowbackOut | Response:
    """GPU-hours per namespace, owner or node over a window: the physical GPU share held
    times hours, with the used and idle parts; the rows add up to `totals.gpuHours`, which
    never exceeds the physical GPU-hours."""
    history = runtime.history
    until = _moment(request, end, "to") if end else history.now()
    since = _moment(request, start, "from") if start else until - DEFAULT_WINDOW
    refusal = window_refusal(
        since, until, by, now=history.now(), retention_days=history.retention_days
    )
    if refusal is not None:
        t = Translator(language_of(request))
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, t(refusal.code, **refusal.params)
        )
    try:
        result = history.showback(since, until, as_by(by))
    except HistoryUnavailableError as exc:
        raise unavailable(request, exc) from exc
    if answer_format == "csv":
        return Response(
            showback_csv(result),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="showback-{by}.csv"'},
        )
    return showback_out(result, start=since, end=until)


@router.get("/nodes/{name}/holders", response_model=HoldersOut, responses=REFUSED)
def get_holders(
    request: Request,
    runtime: RuntimeDep,
    name: Annotated[str, Path(max_length=253)],
    at: Annotated[str, Query(pattern=MOMENT, description="RFC 3339 moment")],
) -> HoldersOut:
    """Per GPU of the node at `at`: the pods that held it, their slots, and the plugin
    config (mode, replicas, its source) in force then."""
    history = runtime.history
    moment = _moment(request, at, "at")
    if moment.tzinfo is None:
        t = Translator(language_of(request))
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, t("history.time-without-zone"))
    try:
        found = history.holders(name, moment)
    except HistoryUnavailableError as exc:
        raise unavailable(request, exc) from exc
    return holders_out(name, moment, history.engine, [(item.gpu, item.holds) for item in found])


def _moment(request: Request, text: str, name: str) -> datetime:
    """An RFC 3339 time the pattern let through; a day or hour that does not exist is 422."""
    try:
        return datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError as exc:
        t = Translator(language_of(request))
        detail = t("history.not-a-time", name=name, value=text)
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail) from exc
