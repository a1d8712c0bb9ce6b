"""Logging in and out: /login (open to all: the way in) and /logout.

A refused login answers with the form again, in the reader's language; the session itself
is app.web.auth's.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.web.auth.principal import AuthRefused
from app.web.auth.requests import get_auth
from app.web.deps import RuntimeDep
from app.web.http.admin_forms import Alert, Checkbox, login_alert, principal_of, render_admin
from app.web.http.html import safe_next, translator, with_lang
from app.web.http.mode_render import PLUGIN_PATH, plugin_page
from app.web.runtime import Runtime

router = APIRouter(include_in_schema=False)

NextPath = Annotated[str | None, Query(max_length=2000)]


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


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, runtime: RuntimeDep, next: NextPath = None) -> HTMLResponse:
    return _login_page(request, runtime)


@router.post("/login", response_class=HTMLResponse)
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


@router.post("/logout")
def logout(request: Request, runtime: RuntimeDep, csrf_token: Checkbox = None) -> Response:
    auth = get_auth(request)
    principal = principal_of(request)
    if principal is None or not auth.csrf_valid(principal, csrf_token):
        alert = Alert(translator(request)("auth_csrf"))
        return plugin_page(request, runtime, alert=alert, status_code=403)
    response = RedirectResponse("/", status_code=303)
    auth.logout(request, response, principal)
    return response
