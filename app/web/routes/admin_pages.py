"""HTML for admins: log in and out, the plugin mode form, preview, apply, the rollout page.

Every POST form carries the CSRF token and is checked by app.web.auth; the actual work
is done by the same use cases as the JSON API (app.web.services.plugin_admin). Undoing a
change lives with the change list (app.web.routes.history_pages). Every text
comes from the catalog (app.i18n) in the request's language; refusals are shown as our
own message, with the server's English words under it where they carry details.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.domain.changes.models import ChangeRequest, PlanRefused
from app.errors import ClusterError
from app.i18n.translate import Translator
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
from app.web.http.language import language_of
from app.web.http.mode_pages import (
    PLUGIN_PATH,
    ROLLOUT_PATH,
    UNDO_MODE_PATH,
    after_mode_write,
    choose_first_page,
    error_page,
    fix_first_page,
    mode_preview_page,
    plugin_page,
    rollout_context,
    rollout_page,
)
from app.web.runtime import Runtime
from app.web.services.change_history import preview_undo_mode, rollback_change
from app.web.services.mode_rollout import NothingHeld, RolloutWouldHold, pass_failing_now
from app.web.services.plugin_admin import apply_mode, preview_mode

router = APIRouter(include_in_schema=False)
login_router = APIRouter(include_in_schema=False)  # open to all: the way in

ChangeId = Annotated[str, Path(max_length=64, pattern=r"^[a-z0-9-]+$")]
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


def refused_form(request: Request, exc: Exception) -> Response:
    """The translated form page for a refusal of `app.web.auth.guards.require_admin_form`."""
    assert isinstance(exc, AuthRefused)
    page = error_page(request, request.app.state.runtime, exc)
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
        return plugin_page(request, runtime, alert=alert, status_code=403)
    response = RedirectResponse("/", status_code=303)
    auth.logout(request, response, principal)
    return response


# the form, preview and apply ---------------------------------------------------------------


@router.get(PLUGIN_PATH, response_class=HTMLResponse)
def plugin_form(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return plugin_page(request, runtime)


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


FIX_FIRST = "fix-first"  # the preview's other answer to a rollout that would hold


@dataclass(frozen=True)
class ApplyChoices:
    """What the preview's apply form carries besides the change: its token, the options.

    `pass_failing`: None when the admin did not answer (refused if the rollout would hold).
    """

    token: str | None
    pass_failing: bool | None
    fix_first: bool = False


def apply_choices(
    token: Annotated[str | None, Form(max_length=16384)] = None,
    pass_failing_nodes: Annotated[str | None, Form(max_length=20)] = None,
) -> ApplyChoices:
    if pass_failing_nodes == FIX_FIRST:
        return ApplyChoices(token or None, False, fix_first=True)
    return ApplyChoices(token or None, True if pass_failing_nodes == "on" else None)


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


def _preview_page(
    request: Request,
    runtime: Runtime,
    csrf_token: str | None,
    to_request: Callable[[], ChangeRequest],
) -> HTMLResponse:
    """The preview of a mode change, with its one Apply button."""
    try:
        principal = admin_of(request, csrf_token)
        change = to_request()
        shown = preview_mode(runtime.changes, principal, change)
    except (AuthRefused, PlanRefused, ClusterError) as error:
        return error_page(request, runtime, error)
    return mode_preview_page(request, runtime, shown, principal, change=change)


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
        return error_page(request, runtime, error)


@router.post(f"{UNDO_MODE_PATH}/preview", response_class=HTMLResponse)
def mode_undo_preview(
    change: ChangeId, request: Request, runtime: RuntimeDep, csrf_token: Checkbox = None
) -> HTMLResponse:
    """What undoing mode change `change` would do, before the admin confirms it."""
    try:
        principal = admin_of(request, csrf_token)
        shown = preview_undo_mode(runtime.changes, principal, change)
    except (AuthRefused, PlanRefused, ClusterError) as error:
        return error_page(request, runtime, error)
    return mode_preview_page(request, runtime, shown, principal, undoes=change)


@router.post(UNDO_MODE_PATH)
def mode_undo(
    change: ChangeId,
    request: Request,
    runtime: RuntimeDep,
    choices: ApplyChoicesDep,
    csrf_token: Checkbox = None,
) -> Response:
    """Undo mode change `change` as previewed (recorded as a rollback naming it)."""
    try:
        principal = admin_of(request, csrf_token)
        if choices.fix_first:
            return fix_first_page(request, runtime)
        rollback_change(
            runtime.changes,
            acting_admin(principal, request),
            change,
            dry_run=False,
            expected=choices.token,
            pass_failing=choices.pass_failing,
        )
    except RolloutWouldHold as held:
        return choose_first_page(request, runtime, held)
    except (AuthRefused, PlanRefused, ClusterError) as error:
        return error_page(request, runtime, error)
    return after_mode_write(request, runtime, ())


def _apply(
    request: Request,
    runtime: Runtime,
    principal: Principal,
    change: ChangeRequest,
    choices: ApplyChoices,
) -> Response:
    if choices.fix_first:
        return fix_first_page(request, runtime)
    try:
        applied = apply_mode(
            runtime.changes,
            acting_admin(principal, request),
            change,
            choices.token,
            pass_failing=choices.pass_failing,
        )
    except RolloutWouldHold as held:
        return choose_first_page(request, runtime, held)
    except (PlanRefused, ClusterError) as error:
        return error_page(request, runtime, error)
    return after_mode_write(request, runtime, applied.result.warnings)


@router.get(ROLLOUT_PATH, response_class=HTMLResponse)
def rollout(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return rollout_page(request, runtime)


@router.post(f"{ROLLOUT_PATH}/pass-failing")
def rollout_pass_failing(
    request: Request, runtime: RuntimeDep, csrf_token: Checkbox = None
) -> Response:
    """The way forward from a held rollout: let it pass its failing nodes now."""
    try:
        principal = admin_of(request, csrf_token)
        pass_failing_now(runtime.changes, acting_admin(principal, request))
    except NothingHeld:
        alert = Alert(translator(request)("rollout_not_held"))
        return rollout_page(request, runtime, alert=alert, status_code=409)
    except (AuthRefused, ClusterError) as error:
        status_code, alert = refusal(request, error)
        return rollout_page(request, runtime, alert=alert, status_code=status_code)
    return RedirectResponse(with_lang(ROLLOUT_PATH, request), status_code=303)


@router.get(f"{ROLLOUT_PATH}/fragment", response_class=HTMLResponse)
def rollout_fragment(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    context = rollout_context(runtime, request)
    html = runtime.templates.get_template("admin/_rollout.html").render(
        {"t": t, "lang": lang, **context}
    )
    return html_response(html)
