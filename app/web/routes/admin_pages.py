"""HTML for admins: log in and out, the plugin mode form, preview, apply, rollout, rollback.

Every POST form carries the CSRF token and is checked by app.web.auth; the actual work
is done by the same use cases as the JSON API (app.web.services.plugin_admin). Every text
comes from the catalog (app.web.i18n) in the request's language; refusals are shown as our
own message, with the server's English words under it where they carry details.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.domain.changes.models import (
    MAX_REPLICAS,
    MIN_REPLICAS,
    ChangeRequest,
    PlanRefused,
    RefusalCode,
)
from app.domain.changes.rollout import failing_plugin_nodes
from app.errors import ClusterError
from app.kube.writer import ApplyFailed
from app.web.auth.state import CSRF_FIELD, AuthRefused, Principal, get_auth
from app.web.deps import RuntimeDep
from app.web.i18n.translate import CATALOGS, Translator, language_of, supported
from app.web.routes.pages import safe_next
from app.web.runtime import Runtime
from app.web.services.plugin_admin import (
    apply_mode,
    audit_user,
    cluster_status,
    config_view,
    preview_mode,
    refusal_status,
)
from app.web.services.rollout_view import parse_broken, rollout_view

router = APIRouter(include_in_schema=False)
login_router = APIRouter(include_in_schema=False)  # open to all: the way in
log = logging.getLogger(__name__)

HTML = "text/html; charset=utf-8"
PLUGIN_PATH = "/admin/plugin"
ROLLOUT_PATH = "/admin/plugin/rollout"
STUCK_AFTER_S = 60.0

Checkbox = Annotated[str | None, Form()]

LOGIN_REFUSALS = {401: "auth_wrong_token", 403: "auth_no_token", 429: "auth_too_many"}
CLUSTER_ERRORS = {403, 404, 409, 422, 502, 503}


@dataclass(frozen=True)
class Alert:
    """A refusal as shown above a form: our translated message, and the server's own words."""

    message: str
    detail: str | None = None


class FormInvalid(PlanRefused):
    """A form field the planner never sees (not a number, no mode); `key` names its message."""

    def __init__(self, key: str, **params: object) -> None:
        super().__init__(RefusalCode.OUT_OF_RANGE, key)
        self.key = key
        self.params = params


def _t(request: Request) -> Translator:
    return Translator(language_of(request))


def _with_lang(path: str, request: Request) -> str:
    """`path`, keeping an explicit (and known) `?lang=` of the request across a redirect."""
    lang = supported(request.query_params.get("lang"))
    if lang is None:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode({'lang': lang})}"


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
    response.headers["Vary"] = "Accept-Language, Cookie"
    return response


def _login_page(
    request: Request, runtime: Runtime, *, alert: Alert | None = None, status_code: int = 200
) -> HTMLResponse:
    return _render(
        request,
        runtime,
        "admin/login.html",
        title=_t(request)("title_admin_login"),
        status_code=status_code,
        alert=alert,
        next=safe_next(request.query_params.get("next")),
    )


def _principal(request: Request) -> Principal | None:
    try:
        return get_auth(request).identify(request, for_write=False)
    except AuthRefused:
        return None


def _admin(request: Request, csrf: str | None) -> Principal:
    return get_auth(request).require_admin(request, csrf=csrf)


def refused_form(request: Request, exc: Exception) -> Response:
    """The translated form page for a refusal of `app.web.guards.require_admin_form`."""
    assert isinstance(exc, AuthRefused)
    page = _error_page(request, request.app.state.runtime, exc)
    if exc.retry_after_s is not None:
        page.headers["Retry-After"] = str(exc.retry_after_s)
    return page


def _refused_page(
    request: Request, runtime: Runtime, status_code: int, alert: Alert
) -> HTMLResponse:
    return _plugin_page(request, runtime, alert=alert, status_code=status_code)


def _plugin_page(
    request: Request, runtime: Runtime, *, alert: Alert | None = None, status_code: int = 200
) -> HTMLResponse:
    return _render(
        request,
        runtime,
        "admin/plugin.html",
        title=_t(request)("title_admin_plugin"),
        status_code=status_code,
        view=config_view(runtime),
        principal=_principal(request),
        alert=alert,
        replicas_min=MIN_REPLICAS,
        replicas_max=MAX_REPLICAS,
    )


# refusals in the reader's language ---------------------------------------------------------


def auth_alert(request: Request, refused: AuthRefused) -> Alert:
    """A refused form write: not logged in, not an admin, a bad CSRF token, rate limited."""
    t = _t(request)
    if refused.status_code == 429:
        return Alert(t("auth_too_many"))
    if refused.status_code == 401:
        return Alert(t("auth_login_needed"))
    principal = _principal(request) if refused.status_code == 403 else None
    if principal is not None and principal.is_admin:
        return Alert(t("auth_csrf"))
    if principal is not None:
        group = get_auth(request).settings.admin_group
        if group:
            return Alert(t("auth_not_admin", user=principal.user, group=group))
        return Alert(t("auth_no_admin_group", user=principal.user))
    return Alert(t("auth_refused", status=refused.status_code), refused.message)


def login_alert(request: Request, refused: AuthRefused) -> Alert:
    """A refused login: wrong token, no token configured, rate limited."""
    t = _t(request)
    key = LOGIN_REFUSALS.get(refused.status_code)
    if key is None:
        return Alert(t("auth_refused", status=refused.status_code), refused.message)
    return Alert(t(key))


def plan_alert(request: Request, refused: PlanRefused) -> Alert:
    """Why the planner refused: the refusal's code in words, its message as the detail."""
    t = _t(request)
    if isinstance(refused, FormInvalid):
        return Alert(t(refused.key, **refused.params))
    return Alert(t(f"refusal_{refused.code.value}"), refused.message)


def cluster_alert(request: Request, error: ClusterError, status_code: int) -> Alert:
    """What the Kubernetes API did wrong, by the status we answer; its message as the detail."""
    t = _t(request)
    if isinstance(error, ApplyFailed):
        key = "apply_failed_restored" if error.restored else "apply_failed_not_restored"
    else:
        key = f"cluster_error_{status_code if status_code in CLUSTER_ERRORS else 502}"
    return Alert(t(key), str(error))


# logging in and out ------------------------------------------------------------------------


NextPath = Annotated[str | None, Query(max_length=2000)]


@login_router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, runtime: RuntimeDep, next: NextPath = None) -> HTMLResponse:
    return _login_page(request, runtime)


@login_router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    runtime: RuntimeDep,
    token: Annotated[str, Form(max_length=4096)] = "",
    next: NextPath = None,
) -> Response:
    target = safe_next(next) if next else PLUGIN_PATH
    response = RedirectResponse(_with_lang(target, request), status_code=303)
    try:
        get_auth(request).login(request, response, token)
    except AuthRefused as refused:
        page = _login_page(
            request,
            runtime,
            alert=login_alert(request, refused),
            status_code=refused.status_code,
        )
        if refused.retry_after_s is not None:
            page.headers["Retry-After"] = str(refused.retry_after_s)
        return page
    return response


@login_router.post("/logout")
def logout(request: Request, runtime: RuntimeDep, csrf_token: Checkbox = None) -> Response:
    auth = get_auth(request)
    principal = _principal(request)
    if principal is None or not auth.csrf_valid(principal, csrf_token):
        return _refused_page(request, runtime, 403, Alert(_t(request)("auth_csrf")))
    response = RedirectResponse("/", status_code=303)
    auth.logout(request, response, principal)
    return response


# the form, preview and apply ---------------------------------------------------------------


@router.get(PLUGIN_PATH, response_class=HTMLResponse)
def plugin_form(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _plugin_page(request, runtime)


@dataclass(frozen=True)
class ModeForm:
    """The mode form's fields as posted; `to_request()` checks them (FormInvalid)."""

    mode: str
    replicas: str
    rename_by_default: str | None
    fail_requests_greater_than_one: str | None
    delete_configmap: str | None

    def to_request(self) -> ChangeRequest:
        mode = self.mode
        if mode not in ("basic", "time-slicing"):
            raise FormInvalid("form_bad_mode")
        try:
            count = int(self.replicas) if mode == "time-slicing" else 1
        except ValueError:
            raise FormInvalid("form_bad_replicas", value=self.replicas) from None
        if mode == "time-slicing" and not MIN_REPLICAS <= count <= MAX_REPLICAS:
            raise FormInvalid(
                "form_replicas_range", min=MIN_REPLICAS, max=MAX_REPLICAS, value=count
            )
        return ChangeRequest(
            mode="basic" if mode == "basic" else "time-slicing",
            replicas=count,
            rename_by_default=self.rename_by_default == "on",
            fail_requests_greater_than_one=self.fail_requests_greater_than_one == "on",
            delete_configmap=self.delete_configmap == "on" and mode == "basic",
        )


def mode_form(
    mode: Annotated[str, Form(max_length=20)] = "",
    replicas: Annotated[str, Form(max_length=10)] = "",
    rename_by_default: Checkbox = None,
    fail_requests_greater_than_one: Checkbox = None,
    delete_configmap: Checkbox = None,
) -> ModeForm:
    return ModeForm(
        mode, replicas, rename_by_default, fail_requests_greater_than_one, delete_configmap
    )


def seen_versions(
    daemonset_version: Checkbox = None, configmap_version: Checkbox = None
) -> dict[str, str | None]:
    """The resourceVersions the preview showed, carried by the form (conflict check)."""
    return {"daemonset": daemonset_version or None, "configmap": configmap_version or None}


ModeFormDep = Annotated[ModeForm, Depends(mode_form)]
SeenVersionsDep = Annotated[dict[str, str | None], Depends(seen_versions)]


def _error_page(request: Request, runtime: Runtime, error: Exception) -> HTMLResponse:
    """The form page with the refusal, in the request's language, for any refused write."""
    if isinstance(error, AuthRefused):
        return _refused_page(request, runtime, error.status_code, auth_alert(request, error))
    if isinstance(error, PlanRefused):
        return _refused_page(request, runtime, refusal_status(error), plan_alert(request, error))
    assert isinstance(error, ClusterError)
    status_code = cluster_status(error)
    return _refused_page(request, runtime, status_code, cluster_alert(request, error, status_code))


@router.post(f"{PLUGIN_PATH}/preview", response_class=HTMLResponse)
def preview(
    request: Request,
    runtime: RuntimeDep,
    form: ModeFormDep,
    csrf_token: Checkbox = None,
) -> HTMLResponse:
    return _preview_page(request, runtime, csrf_token, form.to_request)


@router.post(f"{PLUGIN_PATH}/rollback/preview", response_class=HTMLResponse)
def rollback_preview(
    request: Request, runtime: RuntimeDep, csrf_token: Checkbox = None
) -> HTMLResponse:
    """What rolling back would do (diff, dry run, slots), before the admin confirms it."""
    return _preview_page(request, runtime, csrf_token, None)


def _preview_page(
    request: Request,
    runtime: Runtime,
    csrf_token: str | None,
    to_request: Callable[[], ChangeRequest] | None,
) -> HTMLResponse:
    """The preview of a mode change (`to_request`) or, without one, of the rollback."""
    try:
        principal = _admin(request, csrf_token)
        change = to_request() if to_request is not None else None
        shown = preview_mode(runtime, principal, change)
    except (AuthRefused, PlanRefused, ClusterError) as error:
        return _error_page(request, runtime, error)
    return _render(
        request,
        runtime,
        "admin/preview.html",
        title=_t(request)("title_admin_preview" if change else "rollback_preview_title"),
        preview=shown,
        change=change,
        principal=principal,
        versions=shown.plan.resource_versions,
        rollback=change is None,
    )


@router.post(f"{PLUGIN_PATH}/apply")
def apply(
    request: Request,
    runtime: RuntimeDep,
    form: ModeFormDep,
    expected: SeenVersionsDep,
    csrf_token: Checkbox = None,
) -> Response:
    try:
        principal = _admin(request, csrf_token)
        return _apply(request, runtime, principal, form.to_request(), expected)
    except (AuthRefused, PlanRefused) as error:
        return _error_page(request, runtime, error)


@router.post(f"{PLUGIN_PATH}/rollback")
def rollback(
    request: Request,
    runtime: RuntimeDep,
    expected: SeenVersionsDep,
    csrf_token: Checkbox = None,
) -> Response:
    try:
        principal = _admin(request, csrf_token)
    except AuthRefused as error:
        return _error_page(request, runtime, error)
    return _apply(request, runtime, principal, None, expected)


def _apply(
    request: Request,
    runtime: Runtime,
    principal: Principal,
    change: ChangeRequest | None,
    expected: dict[str, str | None],
) -> Response:
    broken = failing_plugin_nodes(runtime.snapshots.current())  # before the change
    try:
        applied = apply_mode(
            runtime, principal, change, expected, user=audit_user(principal, request)
        )
    except (PlanRefused, ClusterError) as error:
        return _error_page(request, runtime, error)
    query = urlencode(
        {
            "generation": applied.generation,
            "since": applied.result.applied_at.isoformat(),
            "warnings": " | ".join(applied.result.warnings),
            "broken": ",".join(sorted(broken)),
        }
    )
    return RedirectResponse(_with_lang(f"{ROLLOUT_PATH}?{query}", request), status_code=303)


# rollout -----------------------------------------------------------------------------------


def _rollout_context(
    runtime: Runtime,
    lang: str,
    generation: int | None,
    since: str | None,
    broken: str | None = None,
) -> dict[str, Any]:
    view = rollout_view(
        runtime, generation=generation, since=since, broken_before=parse_broken(broken)
    )
    query = {"generation": view.generation, "since": since or "", "lang": lang}
    if broken:
        query["broken"] = broken
    return {
        "status": view.status,
        "expected": view.expected,
        "generation": view.generation,
        "since": since or "",
        "elapsed_s": view.elapsed_s,
        "stuck": view.stuck,
        "poll_url": f"{ROLLOUT_PATH}/fragment?" + urlencode(query),
    }


def _elapsed_s(now: datetime, since: datetime | None) -> float | None:
    return None if since is None else max(0.0, (now - since).total_seconds())


@router.get(ROLLOUT_PATH, response_class=HTMLResponse)
def rollout(
    request: Request,
    runtime: RuntimeDep,
    generation: Annotated[int | None, Query(ge=0)] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    warnings: Annotated[str | None, Query(max_length=4000)] = None,
    broken: Annotated[str | None, Query(max_length=4000)] = None,
) -> HTMLResponse:
    context = _rollout_context(runtime, language_of(request), generation, since, broken)
    return _render(
        request,
        runtime,
        "admin/rollout.html",
        title=_t(request)("title_admin_rollout"),
        principal=_principal(request),
        warnings=[w for w in (warnings or "").split(" | ") if w],
        view=config_view(runtime),
        **context,
    )


@router.get(f"{ROLLOUT_PATH}/fragment", response_class=HTMLResponse)
def rollout_fragment(
    request: Request,
    runtime: RuntimeDep,
    generation: Annotated[int | None, Query(ge=0)] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    broken: Annotated[str | None, Query(max_length=4000)] = None,
) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    context = _rollout_context(runtime, lang, generation, since, broken)
    html = runtime.templates.get_template("admin/_rollout.html").render(
        {"t": t, "lang": lang, **context}
    )
    response = HTMLResponse(html, media_type=HTML)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Vary"] = "Accept-Language, Cookie"
    return response
