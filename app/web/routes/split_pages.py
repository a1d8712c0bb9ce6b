"""The per-node GPU editor's routes: /admin/nodes/{name}/gpus, its preview and apply.

The editor itself (and its form) is app.web.http.split_render; the work is done by the same
use cases as the JSON API (app.web.services.changes.gpu_split). Undoing a split lives with
the change list (app.web.routes.changes_pages). Every POST form carries the CSRF token.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, Response

from app.web.deps import FormWriteDep, RuntimeDep
from app.web.http.admin_forms import FORM_REFUSALS
from app.web.http.split_render import (
    SplitFormDep,
    editor_page,
    editor_refused,
    to_editor,
)
from app.web.services.changes.gpu_split import apply_split, preview_split

router = APIRouter(include_in_schema=False)

NodeName = Annotated[str, Path(max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")]


@router.get("/admin/nodes/{name}/gpus", response_class=HTMLResponse)
def gpus_page(
    name: NodeName,
    request: Request,
    runtime: RuntimeDep,
    applied: Annotated[str | None, Query(max_length=64, pattern=r"^[a-z0-9-]+$")] = None,
) -> HTMLResponse:
    return editor_page(request, runtime, name, applied=applied)


@router.post("/admin/nodes/{name}/gpus/preview", response_class=HTMLResponse)
def gpus_preview(name: NodeName, post: FormWriteDep, form: SplitFormDep) -> HTMLResponse:
    request, runtime = post.request, post.runtime
    try:
        shown = preview_split(runtime.changes, post.admin(), form.request(name))
    except FORM_REFUSALS as error:
        return editor_refused(request, runtime, name, error, form)
    if form.action == "return":
        return editor_page(request, runtime, name, preview=shown, action="return")
    return editor_page(request, runtime, name, preview=shown, action="apply", form=form)


@router.post("/admin/nodes/{name}/gpus/apply")
def gpus_apply(name: NodeName, post: FormWriteDep, form: SplitFormDep) -> Response:
    try:
        admin = post.acting()
        applied = apply_split(post.runtime.changes, admin, form.request(name), form.token)
    except FORM_REFUSALS as error:
        return editor_refused(post.request, post.runtime, name, error)
    return to_editor(post.request, name, applied.change_id)
