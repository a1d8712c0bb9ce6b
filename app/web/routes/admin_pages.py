"""HTML for admins: log in and out, the plugin mode form, preview, apply, rollout, rollback.

Every POST form carries the CSRF token and is checked by app.web.auth; the actual work
is done by the same use cases as the JSON API (app.web.services.plugin_admin). Every text
comes from the catalog (app.web.i18n) in the request's language; refusals are shown as our
own message, with the server's English words under it where they carry details.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.domain.changes.models import (
    MAX_REPLICAS,
    MIN_REPLICAS,
    ChangeRequest,
    ChangeWarning,
    PlanRefused,
)
from app.errors import ClusterError
from app.web.auth.principal import AuthRefused, Principal
from app.web.auth.requests import acting_admin, get_auth
from app.web.deps import RuntimeDep
from app.web.http.admin_forms import (
    Alert,
    admin_of,
    login_alert,
    mode_and_replicas,
    principal_of,
    refusal,
    render_admin,
)
from app.web.http.html import html_response, safe_next, translator, with_lang
from app.web.i18n.translate import Translator, language_of
from app.web.runtime import Runtime
from app.web.services.plugin_admin import apply_mode, config_view, preview_mode
from app.web.services.rollout_view import rollout_view

router = APIRouter(include_in_schema=False)
login_router = APIRouter(include_in_schema=False)  # open to all: the way in

PLUGIN_PATH = "/admin/plugin"
ROLLOUT_PATH = "/admin/plugin/rollout"

Checkbox = Annotated[str | None, Form()]


def _login_page(
    request: Request, runtime: Runtime, *, alert: Alert | None = None, status_code: int = 200
) -> HTMLResponse:
    return render_admin(
        request,
        runtime,
        "admin/login.html",
        title=translator(request)("title_admin_login"),
        status_code=status_code,
        alert=alert,
        next=safe_next(request.query_params.get("next")),
    )


def _plugin_page(
    request: Request, runtime: Runtime, *, alert: Alert | None = None, status_code: int = 200
) -> HTMLResponse:
    return render_admin(
        request,
        runtime,
        "admin/plugin.html",
        title=translator(request)("title_admin_plugin"),
        status_code=status_code,
        view=config_view(runtime.changes),
        principal=principal_of(request),
        alert=alert,
        replicas_min=MIN_REPLICAS,
        replicas_max=MAX_REPLICAS,
    )


def _error_page(request: Request, runtime: Runtime, error: Exception) -> HTMLResponse:
    """The form page with the refusal, in the request's language, for any refused write."""
    status_code, alert = refusal(request, error)
    return _plugin_page(request, runtime, alert=alert, status_code=status_code)


def refused_form(request: Request, exc: Exception) -> Response:
    """The translated form page for a refusal of `app.web.auth.guards.require_admin_form`."""
    assert isinstance(exc, AuthRefused)
    page = _error_page(request, request.app.state.runtime, exc)
    if exc.retry_after_s is not None:
        page.headers["Retry-After"] = str(exc.retry_after_s)
    return page


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
    response = RedirectResponse(with_lang(target, request), status_code=303)
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
    principal = principal_of(request)
    if principal is None or not auth.csrf_valid(principal, csrf_token):
        alert = Alert(translator(request)("auth_csrf"))
        return _plugin_page(request, runtime, alert=alert, status_code=403)
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
    allocation_policy: str | None

    def to_request(self) -> ChangeRequest:
        mode, count = mode_and_replicas(self.mode, self.replicas)
        return ChangeRequest(
            mode=mode,
            replicas=count,
            rename_by_default=self.rename_by_default == "on",
            fail_requests_greater_than_one=self.fail_requests_greater_than_one == "on",
            delete_configmap=self.delete_configmap == "on" and mode == "basic",
            allocation_policy=self.allocation_policy or None,  # "": keep the config's
        )


def mode_form(
    mode: Annotated[str, Form(max_length=20)] = "",
    replicas: Annotated[str, Form(max_length=10)] = "",
    rename_by_default: Checkbox = None,
    fail_requests_greater_than_one: Checkbox = None,
    delete_configmap: Checkbox = None,
    allocation_policy: Annotated[str | None, Form(max_length=32)] = None,
) -> ModeForm:
    return ModeForm(
        mode,
        replicas,
        rename_by_default,
        fail_requests_greater_than_one,
        delete_configmap,
        allocation_policy,
    )


@dataclass(frozen=True)
class ApplyChoices:
    """What the preview's apply form carries besides the change: its token, the options."""

    token: str | None
    pass_failing: bool


def apply_choices(
    token: Annotated[str | None, Form(max_length=16384)] = None,
    pass_failing_nodes: Checkbox = None,
) -> ApplyChoices:
    return ApplyChoices(token or None, pass_failing_nodes == "on")


ModeFormDep = Annotated[ModeForm, Depends(mode_form)]
ApplyChoicesDep = Annotated[ApplyChoices, Depends(apply_choices)]


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
        principal = admin_of(request, csrf_token)
        change = to_request() if to_request is not None else None
        shown = preview_mode(runtime.changes, principal, change)
    except (AuthRefused, PlanRefused, ClusterError) as error:
        return _error_page(request, runtime, error)
    return render_admin(
        request,
        runtime,
        "admin/preview.html",
        title=translator(request)("title_admin_preview" if change else "rollback_preview_title"),
        preview=shown,
        change=change,
        principal=principal,
        rollback=change is None,
    )


@router.post(f"{PLUGIN_PATH}/apply")
def apply(
    request: Request,
    runtime: RuntimeDep,
    form: ModeFormDep,
    choices: ApplyChoicesDep,
    csrf_token: Checkbox = None,
) -> Response:
    try:
        principal = admin_of(request, csrf_token)
        return _apply(request, runtime, principal, form.to_request(), choices)
    except (AuthRefused, PlanRefused) as error:
        return _error_page(request, runtime, error)


@router.post(f"{PLUGIN_PATH}/rollback")
def rollback(
    request: Request,
    runtime: RuntimeDep,
    choices: ApplyChoicesDep,
    csrf_token: Checkbox = None,
) -> Response:
    try:
        principal = admin_of(request, csrf_token)
    except AuthRefused as error:
        return _error_page(request, runtime, error)
    return _apply(request, runtime, principal, None, choices)


def _apply(
    request: Request,
    runtime: Runtime,
    principal: Principal,
    change: ChangeRequest | None,
    choices: ApplyChoices,
) -> Response:
    try:
        applied = apply_mode(
            runtime.changes,
            acting_admin(principal, request),
            change,
            choices.token,
            pass_failing=choices.pass_failing,
        )
    except (PlanRefused, ClusterError) as error:
        return _error_page(request, runtime, error)
    if applied.result.warnings:  # shown once, on the answer itself: never carried in a URL
        return _rollout_page(request, runtime, warnings=list(applied.result.warnings))
    return RedirectResponse(with_lang(ROLLOUT_PATH, request), status_code=303)


# rollout -----------------------------------------------------------------------------------


def _rollout_context(runtime: Runtime, lang: str) -> dict[str, Any]:
    view = rollout_view(runtime.changes)
    return {
        "status": view.status,
        "expected": view.expected,
        "generation": view.generation,
        "record": view.record,
        "state": view.state,
        "elapsed_s": view.elapsed_s,
        "stuck": view.stuck,
        "poll_url": f"{ROLLOUT_PATH}/fragment?lang={lang}",
    }


def _rollout_page(
    request: Request, runtime: Runtime, *, warnings: list[ChangeWarning] | None = None
) -> HTMLResponse:
    return render_admin(
        request,
        runtime,
        "admin/rollout.html",
        title=translator(request)("title_admin_rollout"),
        principal=principal_of(request),
        view=config_view(runtime.changes),
        warnings=warnings or [],
        **_rollout_context(runtime, language_of(request)),
    )


@router.get(ROLLOUT_PATH, response_class=HTMLResponse)
def rollout(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _rollout_page(request, runtime)


@router.get(f"{ROLLOUT_PATH}/fragment", response_class=HTMLResponse)
def rollout_fragment(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    context = _rollout_context(runtime, lang)
    html = runtime.templates.get_template("admin/_rollout.html").render(
        {"t": t, "lang": lang, **context}
    )
    return html_response(html)
