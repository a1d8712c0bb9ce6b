"""`/usage/history`: held, used and idle GPU-hours over 24 hours, 7 or 30 days as SVG
charts drawn on the server, and the showback table with its CSV link; a history that is
off or cannot be read says what and why, and the rest of the dashboard is unaffected."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse

from app.domain.history.showback import SHOWBACK_BY, ShowbackBy
from app.errors import HistoryUnavailableError
from app.i18n.translate import Translator
from app.web.deps import RuntimeDep
from app.web.http.html import REVALIDATE, html_response, layout_context
from app.web.http.language import language_of
from app.web.services.history.service import PERIODS, HistoryChart, NodeTimeline
from app.web.views.history_views import (
    BAR_W,
    TIMELINE_W,
    column_chart,
    gpu_hours_text,
    row_bars,
    timeline_bars,
)
from app.web.views.times import when

router = APIRouter(include_in_schema=False)
HISTORY_PATH = "/usage/history"


@router.get(HISTORY_PATH, response_class=HTMLResponse)
def usage_history_page(
    request: Request,
    runtime: RuntimeDep,
    period: Annotated[Literal["24h", "7d", "30d"], Query()] = "24h",
    by: Annotated[ShowbackBy, Query()] = "namespace",
) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    history = runtime.history
    chart: HistoryChart | None = None
    problem = history.problem()
    try:
        chart = history.chart(period, by)
    except HistoryUnavailableError as exc:
        problem = exc
    csv_url = None
    if chart is not None:
        query = {"from": chart.start.isoformat(), "to": chart.end.isoformat(), "by": by}
        csv_url = f"/api/v1/showback?{urlencode({**query, 'format': 'csv'})}"
    html = runtime.templates.get_template("pages/usage_history.html").render(
        {
            **layout_context(request, lang=lang, title=t("title_usage_history")),
            "period": period,
            "periods": list(PERIODS),
            "by": by,
            "by_options": SHOWBACK_BY,
            "engine": "memory"
            if history.engine == "sqlite" and runtime.settings.history_path is None
            else history.engine,
            "problem": t(problem.code, detail=problem.detail) if problem is not None else None,
            # read from the file another replica writes (this one takes over when it ends)
            "writer": history.writer_elsewhere() if history.engine == "sqlite" else None,
            "chart": column_chart(chart.buckets, start=chart.start, step=chart.step)
            if chart is not None
            else None,
            "showback": chart.showback if chart is not None else None,
            "bars": row_bars(chart.showback) if chart is not None else [],
            "bar_width": BAR_W,
            "hours": gpu_hours_text,
            "when": when,
            "csv_url": csv_url,
        }
    )
    return html_response(html, cache=REVALIDATE)


@router.get("/nodes/{name}/history", response_class=HTMLResponse)
def node_history_page(
    request: Request, runtime: RuntimeDep, name: Annotated[str, Path(max_length=253)]
) -> HTMLResponse:
    """Who held each GPU of a node over the last 24 hours, under which plugin config."""
    lang = language_of(request)
    t = Translator(lang)
    history = runtime.history
    problem = history.problem()
    timeline: NodeTimeline | None = None
    try:
        timeline = history.timeline(name)
    except HistoryUnavailableError as exc:
        problem = exc
    html = runtime.templates.get_template("pages/node_history.html").render(
        {
            **layout_context(request, lang=lang, title=t("title_node_history", node=name)),
            "node": name,
            "problem": t(problem.code, detail=problem.detail) if problem is not None else None,
            "timeline": timeline,
            "lanes": [
                (index, uuid, timeline_bars(holds, start=timeline.start, end=timeline.end))
                for index, uuid, holds in timeline.lanes
            ]
            if timeline is not None
            else [],
            "width": TIMELINE_W,
            "when": when,
        }
    )
    return html_response(html, cache=REVALIDATE)
