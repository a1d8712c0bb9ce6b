"""Will it fit: `POST /api/v1/fit` and the page `/fit` (issue 45).

Both ask the domain's pure check over the current snapshot; nothing is written to the
cluster, so both take the rights of a read (the app attaches the reader guards). A body or a
form the check cannot ask about is a 422 worded in the caller's language, naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Form, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, Response
from pydantic_core import to_json

from app.domain.fit.check import Wishes
from app.domain.fit.manifest import FitInputError, PodAsk, read_ask
from app.domain.snapshot import Snapshot
from app.i18n.translate import Translator
from app.web.deps import Lang, RuntimeDep, SnapshotDep
from app.web.http.html import REVALIDATE, html_response, layout_context
from app.web.http.language import language_of
from app.web.runtime import Runtime
from app.web.services.fit import (
    MAX_FIT_BODY_BYTES,
    FitForm,
    answer_of,
    ask_of_body,
    form_manifest,
    form_wishes,
)
from app.web.views.fit_schemas import FitAnswerOut
from app.web.views.fit_words import input_error_text, node_rows

api_router = APIRouter(prefix="/api/v1", tags=["read"])
page_router = APIRouter(include_in_schema=False)
FIT_PATH = "/fit"
QUOTAS = "resourcequotas"  # the cache's collection (app.kube.cache)

_EXAMPLE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "train", "namespace": "ml"},
    "spec": {
        "containers": [
            {"name": "main", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ]
    },
}
_BODY_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "A Pod manifest, or a Deployment, StatefulSet, ReplicaSet, DaemonSet, "
        f"Job or CronJob (its pod template is asked); one document, at most "
        f"{MAX_FIT_BODY_BYTES} bytes",
        "content": {
            "application/json": {"schema": {"type": "object"}, "example": _EXAMPLE_POD},
            "application/yaml": {
                "schema": {"type": "object"},
                "example": yaml.safe_dump(_EXAMPLE_POD, sort_keys=False),
            },
        },
    }
}


@api_router.post(
    "/fit",
    openapi_extra=_BODY_DOC,
    responses={
        200: {"model": FitAnswerOut, "description": "The answer for every GPU node"},
        422: {"description": "Not a manifest the check can ask about (the field is named)"},
        413: {"description": f"A body over {MAX_FIT_BODY_BYTES} bytes"},
    },
)
async def post_fit(
    request: Request, runtime: RuntimeDep, snapshot: SnapshotDep, lang: Lang
) -> Response:
    """Where this pod could run now: per GPU node, whether the scheduler could bind it and the
    plugin would admit it, why not (codes with params), and the GPUs it would likely get.
    Writes nothing."""
    body = await request.body()
    try:
        ask = ask_of_body(body, content_type=request.headers.get("content-type", ""))
        answer = answer_of(
            snapshot, ask, memo=runtime.fit_memo, quotas=runtime.source.items(QUOTAS)
        )
    except FitInputError as error:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, input_error_text(error, lang)
        ) from None
    # bytes at once, not validated again: 10,000 nodes answer in ~2 MB
    return Response(to_json(answer), media_type="application/json")


FormText = Annotated[str, Query(max_length=200)]


@page_router.get(FIT_PATH, response_class=HTMLResponse)
def fit_page(
    request: Request,
    runtime: RuntimeDep,
    resource: FormText = "",
    count: FormText = "1",
    model: FormText = "",
    min_free_gib: FormText = "",
    namespace: FormText = "default",
    tolerations: Annotated[str, Query(max_length=2000)] = "",
) -> HTMLResponse:
    """The form; with `resource` set, the answer for the pod it describes."""
    form = FitForm(resource, count, model, min_free_gib, namespace, tolerations)
    if not resource:
        return _render(request, runtime, form=FitForm(), asked=False)
    return _render(request, runtime, form=form, asked=True)


@page_router.post(FIT_PATH, response_class=HTMLResponse)
def fit_page_manifest(
    request: Request,
    runtime: RuntimeDep,
    manifest: Annotated[str, Form(max_length=MAX_FIT_BODY_BYTES)] = "",
) -> HTMLResponse:
    """The answer for a pasted manifest."""
    return _render(request, runtime, form=FitForm(), asked=True, manifest=manifest)


def _render(
    request: Request, runtime: Runtime, *, form: FitForm, asked: bool, manifest: str | None = None
) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    snapshot = runtime.snapshots.current()
    error: str | None = None
    rows = None
    fits = None
    if asked and snapshot is not None:
        try:
            ask, wishes = _ask(form, manifest)
            quotas = runtime.source.items(QUOTAS)
            answer = answer_of(snapshot, ask, memo=runtime.fit_memo, quotas=quotas, wishes=wishes)
            rows, fits = node_rows(snapshot, answer, lang), answer.fits
        except FitInputError as exc:
            error = input_error_text(exc, lang)
    html = runtime.templates.get_template("pages/fit.html").render(
        {
            **layout_context(request, lang=lang, title=t("title_fit")),
            "form": form,
            "manifest": manifest or "",
            "choices": _choices(snapshot),
            "asked": asked,
            "ready": snapshot is not None,
            "error": error,
            "rows": rows,
            "fits": fits,
        }
    )
    return html_response(html, status_code=422 if error else 200, cache=REVALIDATE)


def _ask(form: FitForm, manifest: str | None) -> tuple[PodAsk, Wishes]:
    if manifest is not None:
        return ask_of_body(manifest.encode("utf-8"), content_type="application/yaml"), Wishes()
    return read_ask(form_manifest(form)), form_wishes(form)


def _choices(snapshot: Snapshot | None) -> dict[str, list[str]]:
    """The form's lists: the GPU resources the nodes advertise and the GPU models reported."""
    if snapshot is None:
        return {"resources": ["nvidia.com/gpu"], "models": []}
    resources = {"nvidia.com/gpu", *snapshot.resources, *snapshot.dra.extended_resources}
    models = {gpu.name for node in snapshot.nodes for gpu in node.gpus if gpu.name}
    return {"resources": sorted(resources), "models": sorted(models)}
