"""HTML for admins: log in and out, the plugin mode form, preview, apply, rollout, rollback.

Every POST form carries the CSRF token and is checked by app.web.auth; the actual work is
done by the same helpers as the JSON API (app.web.admin_api).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.domain.change_plan import (
    ChangePlan,
    ChangeRequest,
    PlanRefused,
    RefusalCode,
    current_settings,
)
from app.domain.change_preview import rollout_status
from app.domain.kube_time import parse_time
from app.errors import ClusterError
from app.kube.writer import check_versions
from app.web.admin_api import (
    apply_plan,
    build_preview,
    cached_objects,
    cluster_status,
    config_view,
    make_plan,
    refusal_status,
    writer_for,
)
from app.web.auth import CSRF_FIELD, AuthRefused, Principal, get_auth
from app.web.deps import RuntimeDep
from app.web.i18n import CATALOGS, Translator, language_of
from app.web.runtime import Runtime

router = APIRouter(include_in_schema=False)
log = logging.getLogger(__name__)

HTML = "text/html; charset=utf-8"
PLUGIN_PATH = "/admin/plugin"
ROLLOUT_PATH = "/admin/plugin/rollout"
STUCK_AFTER_S = 60.0

Checkbox = Annotated[str | None, Form()]


def _render(
    request: Request,
    runtime: Runtime,
    template: str,
    *,
    title: str,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    lang = language_of(request)
    html = runtime.templates.get_template(template).render(
        {
            "t": Translator(lang),
            "lang": lang,
            "languages": list(CATALOGS),
            "title": title,
            "path": request.url.path,
            "live_url": None,
            "refresh_s": "",
            "csrf_field": CSRF_FIELD,
            **context,
        }
    )
    response = HTMLResponse(html, status_code=status_code, media_type=HTML)
    response.headers["Cache-Control"] = "no-store"
    return response


def _principal(request: Request) -> Principal | None:
    try:
        return get_auth(request).identify(request)
    except AuthRefused:
        return None


def _admin(request: Request, csrf: str | None) -> Principal:
    return get_auth(request).require_admin(request, csrf=csrf)


def _refused_page(
    request: Request, runtime: Runtime, status_code: int, message: str
) -> HTMLResponse:
    return _plugin_page(request, runtime, error=message, status_code=status_code)


def _plugin_page(
    request: Request,
    runtime: Runtime,
    *,
    error: str | None = None,
    notice: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    principal = _principal(request)
    view = config_view(runtime)
    return _render(
        request,
        runtime,
        "admin/plugin.html",
        title="Device plugin mode",
        status_code=status_code,
        view=view,
        principal=principal,
        error=error,
        notice=notice,
    )


# logging in and out ------------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _render(request, runtime, "admin/login.html", title="Admin login", error=None)


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request, runtime: RuntimeDep, token: Annotated[str, Form(max_length=4096)] = ""
) -> Response:
    response = RedirectResponse(PLUGIN_PATH, status_code=303)
    try:
        get_auth(request).login(request, response, token)
    except AuthRefused as refused:
        page = _render(
            request,
            runtime,
            "admin/login.html",
            title="Admin login",
            status_code=refused.status_code,
            error=refused.message,
        )
        if refused.retry_after_s is not None:
            page.headers["Retry-After"] = str(refused.retry_after_s)
        return page
    return response


@router.post("/logout")
def logout(request: Request, runtime: RuntimeDep, csrf_token: Checkbox = None) -> Response:
    auth = get_auth(request)
    principal = _principal(request)
    if principal is None or not auth.csrf_valid(principal, csrf_token):
        return _refused_page(request, runtime, 403, "Missing or wrong CSRF token.")
    response = RedirectResponse("/", status_code=303)
    auth.logout(request, response, principal)
    return response


# the form, preview and apply ---------------------------------------------------------------


@router.get(PLUGIN_PATH, response_class=HTMLResponse)
def plugin_form(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    auth = get_auth(request)
    if not auth.settings.public_reads and _principal(request) is None:
        return _render(request, runtime, "admin/login.html", title="Admin login", error=None)
    return _plugin_page(request, runtime)


def _form_request(
    mode: str, replicas: str, rename: str | None, fail_gt_one: str | None, delete: str | None
) -> ChangeRequest:
    if mode not in ("basic", "time-slicing"):
        raise _bad_form("mode must be basic or time-slicing.")
    try:
        count = int(replicas) if mode == "time-slicing" else 1
    except ValueError:
        raise _bad_form(f"replicas must be a whole number (got {replicas!r}).") from None
    return ChangeRequest(
        mode="basic" if mode == "basic" else "time-slicing",
        replicas=count,
        rename_by_default=rename == "on",
        fail_requests_greater_than_one=fail_gt_one == "on",
        delete_configmap=delete == "on" and mode == "basic",
    )


def _bad_form(message: str) -> PlanRefused:
    return PlanRefused(RefusalCode.OUT_OF_RANGE, message)


@router.post(f"{PLUGIN_PATH}/preview", response_class=HTMLResponse)
def preview(
    request: Request,
    runtime: RuntimeDep,
    mode: Annotated[str, Form(max_length=20)] = "",
    replicas: Annotated[str, Form(max_length=10)] = "",
    rename_by_default: Checkbox = None,
    fail_requests_greater_than_one: Checkbox = None,
    delete_configmap: Checkbox = None,
    csrf_token: Checkbox = None,
) -> HTMLResponse:
    try:
        principal = _admin(request, csrf_token)
        change = _form_request(
            mode, replicas, rename_by_default, fail_requests_greater_than_one, delete_configmap
        )
        with writer_for(runtime, principal) as writer:
            plan = make_plan(runtime, writer, change)
            shown = build_preview(runtime, writer, plan)
    except AuthRefused as refused:
        return _refused_page(request, runtime, refused.status_code, refused.message)
    except PlanRefused as refused:
        return _refused_page(request, runtime, refusal_status(refused), refused.message)
    except ClusterError as error:
        return _refused_page(request, runtime, cluster_status(error), str(error))
    return _render(
        request,
        runtime,
        "admin/preview.html",
        title="Preview: device plugin change",
        preview=shown,
        change=change,
        principal=principal,
        versions=plan.resource_versions,
    )


@router.post(f"{PLUGIN_PATH}/apply")
def apply(
    request: Request,
    runtime: RuntimeDep,
    mode: Annotated[str, Form(max_length=20)] = "",
    replicas: Annotated[str, Form(max_length=10)] = "",
    rename_by_default: Checkbox = None,
    fail_requests_greater_than_one: Checkbox = None,
    delete_configmap: Checkbox = None,
    daemonset_version: Checkbox = None,
    configmap_version: Checkbox = None,
    csrf_token: Checkbox = None,
) -> Response:
    try:
        principal = _admin(request, csrf_token)
        change = _form_request(
            mode, replicas, rename_by_default, fail_requests_greater_than_one, delete_configmap
        )
        expected = {"daemonset": daemonset_version or None, "configmap": configmap_version or None}
        return _apply(request, runtime, principal, change, expected)
    except AuthRefused as refused:
        return _refused_page(request, runtime, refused.status_code, refused.message)
    except PlanRefused as refused:
        return _refused_page(request, runtime, refusal_status(refused), refused.message)


@router.post(f"{PLUGIN_PATH}/rollback")
def rollback(
    request: Request,
    runtime: RuntimeDep,
    daemonset_version: Checkbox = None,
    configmap_version: Checkbox = None,
    csrf_token: Checkbox = None,
) -> Response:
    try:
        principal = _admin(request, csrf_token)
    except AuthRefused as refused:
        return _refused_page(request, runtime, refused.status_code, refused.message)
    expected = {"daemonset": daemonset_version or None, "configmap": configmap_version or None}
    return _apply(request, runtime, principal, None, expected)


def _apply(
    request: Request,
    runtime: Runtime,
    principal: Principal,
    change: ChangeRequest | None,
    expected: dict[str, str | None],
) -> Response:
    try:
        with writer_for(runtime, principal) as writer:
            plan: ChangePlan = make_plan(runtime, writer, change)
            check_versions(plan, expected)
            result = apply_plan(writer, plan, principal=principal, request=request)
    except PlanRefused as refused:
        return _refused_page(request, runtime, refusal_status(refused), refused.message)
    except ClusterError as error:
        return _refused_page(request, runtime, cluster_status(error), str(error))
    runtime.snapshots.poke()
    generation = int((result.daemonset.get("metadata") or {}).get("generation") or 0)
    query = urlencode(
        {
            "generation": generation,
            "since": result.applied_at.isoformat(),
            "warnings": " | ".join(result.warnings),
        }
    )
    return RedirectResponse(f"{ROLLOUT_PATH}?{query}", status_code=303)


# rollout -----------------------------------------------------------------------------------


def _rollout_context(runtime: Runtime, generation: int, since: str | None) -> dict[str, Any]:
    daemonset, configmap = cached_objects(runtime)
    expected = current_settings(daemonset, configmap) if daemonset is not None else None
    started_at = parse_time(since)
    status = None
    if expected is not None:
        status = rollout_status(
            daemonset,
            runtime.source.items("pods"),
            runtime.snapshots.current(),
            expected=expected,
            generation=generation,
            since=started_at,
        )
    elapsed_s = _elapsed_s(runtime.clock(), started_at)
    return {
        "status": status,
        "expected": expected,
        "generation": generation,
        "since": since or "",
        "elapsed_s": elapsed_s,
        "stuck": elapsed_s is not None and elapsed_s > STUCK_AFTER_S,
        "poll_url": f"{ROLLOUT_PATH}/fragment?"
        + urlencode({"generation": generation, "since": since or ""}),
    }


def _elapsed_s(now: datetime, since: datetime | None) -> float | None:
    return None if since is None else max(0.0, (now - since).total_seconds())


@router.get(ROLLOUT_PATH, response_class=HTMLResponse)
def rollout(
    request: Request,
    runtime: RuntimeDep,
    generation: Annotated[int, Query(ge=0)] = 0,
    since: Annotated[str | None, Query(max_length=64)] = None,
    warnings: Annotated[str | None, Query(max_length=4000)] = None,
) -> HTMLResponse:
    if not runtime.settings.public_reads and _principal(request) is None:
        return _render(request, runtime, "admin/login.html", title="Admin login", error=None)
    context = _rollout_context(runtime, generation, since)
    return _render(
        request,
        runtime,
        "admin/rollout.html",
        title="Rollout of the device plugin",
        principal=_principal(request),
        warnings=[w for w in (warnings or "").split(" | ") if w],
        view=config_view(runtime),
        **context,
    )


@router.get(f"{ROLLOUT_PATH}/fragment", response_class=HTMLResponse)
def rollout_fragment(
    request: Request,
    runtime: RuntimeDep,
    generation: Annotated[int, Query(ge=0)] = 0,
    since: Annotated[str | None, Query(max_length=64)] = None,
) -> HTMLResponse:
    if not runtime.settings.public_reads and _principal(request) is None:
        return HTMLResponse("Log in first.", status_code=401, media_type=HTML)
    context = _rollout_context(runtime, generation, since)
    html = runtime.templates.get_template("admin/_rollout.html").render(context)
    response = HTMLResponse(html, media_type=HTML)
    response.headers["Cache-Control"] = "no-store"
    return response
