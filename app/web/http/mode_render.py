"""The plugin-mode pages as rendered: the form, a preview, the rollout, and the answers
that write nothing (fix the failing nodes first, choose first, nothing to change).

The routes (app.web.routes.mode_pages, rollout_pages, changes_pages and login_pages) turn
requests into use-case calls and hand their outcome here, so the form, the preview and the
rollout page read the same way whichever route led to them.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from app.domain.changes.models import (
    MAX_REPLICAS,
    MIN_REPLICAS,
    ChangeRequest,
    ChangeWarning,
    PlanRefused,
    RefusalCode,
)
from app.errors import ClusterError
from app.web.auth.principal import AuthRefused, Principal
from app.web.auth.state import CSRF_FIELD
from app.web.http.admin_forms import Alert, principal_of, refusal, render_admin
from app.web.http.html import translator, with_lang
from app.web.http.language import language_of
from app.web.runtime import Runtime
from app.web.services.changes.listing import ModeUndo, mode_undo
from app.web.services.changes.mode_rollout import RolloutWouldHold, failing_now
from app.web.services.changes.plugin_admin import Preview, allocation_policy_offered, config_view
from app.web.services.changes.rollout_view import rollout_view

PLUGIN_PATH = "/admin/plugin"
ROLLOUT_PATH = "/admin/plugin/rollout"
# Undoing a mode change: offered by the change list (and for the newest, by the plugin page),
# previewed and confirmed on the same two routes (app.web.routes.changes_pages).
UNDO_MODE_PATH = "/admin/changes/{change}/mode-rollback"


def plugin_page(
    request: Request,
    runtime: Runtime,
    *,
    alert: Alert | None = None,
    status_code: int = 200,
    fix_first: frozenset[str] = frozenset(),
) -> HTMLResponse:
    principal = principal_of(request)
    return _plugin_page(
        request,
        runtime,
        "plugin",
        status_code=status_code,
        rollout=rollout_view(runtime.changes),
        principal=principal,
        alert=alert,
        fix_first=sorted(fix_first),
        policy_offered=allocation_policy_offered(runtime.changes),
        replicas_min=MIN_REPLICAS,
        replicas_max=MAX_REPLICAS,
        undo=_undo(runtime) if principal is not None and principal.is_admin else None,
    )


def _plugin_page(
    request: Request,
    runtime: Runtime,
    page: Literal["plugin", "rollout"],
    *,
    status_code: int,
    **context: Any,
) -> HTMLResponse:
    """One of the plugin's own pages (its form, its rollout), with its config as it is now."""
    return render_admin(
        request,
        runtime,
        f"admin/{page}.html",
        title=translator(request)(f"title_admin_{page}"),
        status_code=status_code,
        view=config_view(runtime.changes),
        **context,
    )


def _undo(runtime: Runtime) -> ModeUndo | None:
    """The newest mode change, offered to an admin to undo (None: none, or no history to
    read): the history is read from the API server, so only for the admin who sees it."""
    try:
        return mode_undo(runtime.changes)
    except ClusterError:
        return None


def refused_form(request: Request, exc: Exception) -> Response:
    """The translated form page for a refusal of `app.web.auth.guards.require_admin_form`."""
    assert isinstance(exc, AuthRefused)
    page = error_page(request, request.app.state.runtime, exc)
    if exc.retry_after_s is not None:
        page.headers["Retry-After"] = str(exc.retry_after_s)
    return page


def error_page(request: Request, runtime: Runtime, error: Exception) -> HTMLResponse:
    """The form page with the refusal, in the request's language, for any refused write."""
    status_code, alert = refusal(request, error)
    if isinstance(error, PlanRefused) and error.code is RefusalCode.NO_CHANGE:
        alert = _no_change_alert(request, runtime)
    return plugin_page(request, runtime, alert=alert, status_code=status_code)


def _no_change_alert(request: Request, runtime: Runtime) -> Alert:
    """ "Nothing to change", said once; never of a change whose rollout has not finished."""
    t = translator(request)
    view = rollout_view(runtime.changes)
    if view.state not in ("rolling-out", "stuck"):
        return Alert(t("refusal_no-change"))
    link = Markup('<a href="{}" data-testid="to-rollout">{}</a>').format(
        with_lang(ROLLOUT_PATH, request), t("rollout_open_link")
    )
    if view.held_by:
        return Alert(t("no_change_held", nodes=", ".join(view.held_by), link=link))
    return Alert(t("no_change_rolling_out", link=link))


def mode_preview_page(
    request: Request,
    runtime: Runtime,
    shown: Preview,
    principal: Principal,
    asked: ChangeRequest | str,
) -> HTMLResponse:
    """The preview page of mode change `asked`, or of undoing the change whose id it is."""
    undoing = isinstance(asked, str)
    return render_admin(
        request,
        runtime,
        "admin/preview.html",
        title=translator(request)("rollback_preview_title" if undoing else "title_admin_preview"),
        preview=shown,
        change=None if undoing else asked,
        principal=principal,
        rollback=undoing,
        apply_path=UNDO_MODE_PATH.format(change=asked) if undoing else f"{PLUGIN_PATH}/apply",
        rollout=rollout_view(runtime.changes),
    )


def fix_first_page(request: Request, runtime: Runtime) -> HTMLResponse:
    """The admin chose to fix the failing nodes before the change: nothing is written."""
    return plugin_page(request, runtime, fix_first=failing_now(runtime.changes))


def choose_first_page(request: Request, runtime: Runtime, held: RolloutWouldHold) -> HTMLResponse:
    """Apply without answering the preview's question: nothing is written (409)."""
    t = translator(request)
    nodes = ", ".join(sorted(held.failing.nodes))
    return plugin_page(
        request, runtime, alert=Alert(t("apply_choose_first", nodes=nodes)), status_code=409
    )


def after_mode_write(
    request: Request, runtime: Runtime, warnings: tuple[ChangeWarning, ...] | list[ChangeWarning]
) -> Response:
    """The rollout page after a mode write (its warnings shown once, never in a URL)."""
    if warnings:
        return rollout_page(request, runtime, warnings=list(warnings))
    return RedirectResponse(with_lang(ROLLOUT_PATH, request), status_code=303)


# rollout -----------------------------------------------------------------------------------


def rollout_context(runtime: Runtime, request: Request) -> dict[str, Any]:
    view = rollout_view(runtime.changes)
    return {
        "status": view.status,
        "expected": view.expected,
        "generation": view.generation,
        "record": view.record,
        "state": view.state,
        "elapsed_s": view.elapsed_s,
        "idle_s": view.idle_s,
        "stuck": view.stuck,
        "held_by": view.held_by,
        "principal": principal_of(request),
        "csrf_field": CSRF_FIELD,
        "poll_url": f"{ROLLOUT_PATH}/fragment?lang={language_of(request)}",
    }


def rollout_page(
    request: Request,
    runtime: Runtime,
    *,
    warnings: list[ChangeWarning] | None = None,
    alert: Alert | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    return _plugin_page(
        request,
        runtime,
        "rollout",
        status_code=status_code,
        warnings=warnings or [],
        alert=alert,
        **rollout_context(runtime, request),
    )
