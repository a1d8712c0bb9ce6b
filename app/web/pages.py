"""HTML pages, rendered from the current snapshot."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.web.deps import RuntimeDep

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
async def overview(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    snapshot = runtime.snapshots.current()
    return runtime.templates.TemplateResponse(
        request, "pages/overview.html", {"snapshot": snapshot}
    )
