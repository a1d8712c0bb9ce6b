"""The guards every router is included with (app.web.app), so no route can forget one.

- reads (`require_reader`): anyone while GEO_MLOPS_PUBLIC_READS is on, else an admin
  session, the admin bearer token or a trusted proxy's user; a page answers with a
  redirect to the login form instead (`require_page_reader`);
- /metrics (`require_metrics`): its own bearer token when GEO_MLOPS_METRICS_TOKEN is set
  (what Prometheus sends), else the rule of reads;
- writes (`require_admin_writes`): every method but GET/HEAD needs an admin (and CSRF
  for ambient identities; see app.web.auth.state); the admin forms (`require_admin_form`) need
  an admin too, and their handlers check the CSRF field of the form.

A bearer token on a read that is not the admin's is not an identity, and never counts as a
failed login.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import FastAPI, HTTPException, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.i18n.translate import Translator
from app.web.auth.principal import AuthRefused, Principal
from app.web.auth.requests import get_auth, refused_http
from app.web.auth.state import CSRF_HEADER
from app.web.auth.tokens import bearer_token, same_token
from app.web.http.language import language_of

READ_METHODS = frozenset({"GET", "HEAD"})
LOGIN_PATH = "/login"


class LoginRequired(Exception):
    """A page or fragment was asked for without a login while reads are not public."""

    def __init__(self, next_path: str, *, fragment: bool) -> None:
        super().__init__(next_path)
        self.next_path = next_path
        self.fragment = fragment  # answered 401 with a sentence, not a redirect


def _read_refused() -> HTTPException:
    return refused_http(
        AuthRefused(
            status.HTTP_401_UNAUTHORIZED, "Log in to read this (GEO_MLOPS_PUBLIC_READS is off)."
        )
    )


async def require_reader(request: Request) -> Principal | None:
    """Reads: anyone when reads are public, else any authenticated caller (401)."""
    if get_auth(request).settings.public_reads:
        return None  # nothing to check (and nothing to parse) on the hot path
    return await run_in_threadpool(_identified_reader, request)


def _identified_reader(request: Request) -> Principal:
    """The caller of a read when reads are not public (may ask the API server: blocks)."""
    principal = get_auth(request).identify(request, for_write=False)
    if principal is None:
        raise _read_refused()
    return principal


async def require_page_reader(request: Request) -> Principal | None:
    """Like `require_reader`, but a page answers with a redirect to the login form."""
    if get_auth(request).settings.public_reads:
        return None
    principal = await run_in_threadpool(get_auth(request).identify, request, for_write=False)
    if principal is None:
        if request.method not in READ_METHODS:
            raise _read_refused()
        path = request.url.path
        fragment = (
            bool(request.headers.get("hx-request"))
            or path.startswith("/fragments/")
            or path.endswith("/fragment")
        )
        raise LoginRequired(path, fragment=fragment)
    return principal


def require_metrics(request: Request) -> None:
    """/metrics: the metrics token when one is configured, else the rule of reads."""
    auth = get_auth(request)
    expected = auth.settings.secret("metrics_token")
    if expected is None:
        if not auth.settings.public_reads:
            _identified_reader(request)
        return
    if same_token(bearer_token(request.headers.get("authorization")), expected):
        return
    if auth.identify(request, for_write=False) is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "Send the metrics token (Authorization: Bearer <GEO_MLOPS_METRICS_TOKEN>).",
            headers={"WWW-Authenticate": "Bearer"},
        )


def require_admin_writes(request: Request) -> Principal | None:
    """Every method but GET/HEAD: an admin, with the CSRF header for ambient identities."""
    if request.method in READ_METHODS:
        return None
    try:
        return get_auth(request).require_admin(request, csrf=request.headers.get(CSRF_HEADER))
    except AuthRefused as refused:
        raise refused_http(refused) from refused


def require_admin_form(request: Request) -> None:
    """Admin form writes: an admin (the handler checks the CSRF field, which only the form
    body carries). Raises AuthRefused, which the app renders as the translated form page."""
    if request.method in READ_METHODS:
        return
    principal = get_auth(request).identify(request, for_write=True)
    if principal is None:
        raise AuthRefused(401, "Log in as an admin, or send Authorization: Bearer <admin token>.")
    if not principal.is_admin:
        raise AuthRefused(403, f"{principal.user} is not an admin.")


def add_guard_handlers(app: FastAPI) -> None:
    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, LoginRequired)
        if exc.fragment:
            text = Translator(language_of(request))("auth_login_needed")
            return HTMLResponse(text, status_code=status.HTTP_401_UNAUTHORIZED)
        query = urlencode({"next": exc.next_path})
        return RedirectResponse(f"{LOGIN_PATH}?{query}", status_code=status.HTTP_303_SEE_OTHER)
