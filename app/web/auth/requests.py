"""The app's AuthState from a request, and the answers of refused API writes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from app.web.auth.principal import Admin, AuthRefused, Principal
from app.web.auth.state import CSRF_HEADER, AuthState


def get_auth(request: Request) -> AuthState:
    """The app's AuthState (made with the app, one per process)."""
    state = request.app.state.runtime.auth
    if not isinstance(state, AuthState):
        raise TypeError("app.state.runtime.auth is not an AuthState")
    return state


def client_address(request: Request) -> str:
    """The caller's address as the app's AuthState sees it (trusted proxies resolved)."""
    return get_auth(request).client_address(request)


def audit_user(principal: Principal, request: Request) -> str:
    """Who made a change, as the change history records it."""
    if principal.method == "proxy":
        return principal.user
    how = "bearer" if principal.method == "bearer" else "login"
    return f"{principal.user}@{client_address(request)} ({how})"


def refused_http(refused: AuthRefused) -> HTTPException:
    """A refused API call as HTTP: 401 asks for a bearer token, 429 says when to retry."""
    headers: dict[str, str] = {}
    if refused.status_code == status.HTTP_401_UNAUTHORIZED:
        headers["WWW-Authenticate"] = "Bearer"
    if refused.retry_after_s is not None:
        headers["Retry-After"] = str(refused.retry_after_s)
    return HTTPException(refused.status_code, refused.message, headers=headers or None)


def require_admin_api(request: Request) -> Principal:
    """Dependency for JSON writes: bearer token, or an ambient identity plus X-CSRF-Token."""
    auth = get_auth(request)
    try:
        return auth.require_admin(request, csrf=request.headers.get(CSRF_HEADER))
    except AuthRefused as refused:
        raise refused_http(refused) from refused


def acting_admin(principal: Principal, request: Request) -> Admin:
    """The admin making a change, named as the change history records them."""
    return Admin(principal, audit_user(principal, request))


def require_admin_change(request: Request) -> Admin:
    """Dependency for JSON writes that change the cluster: the admin and their audit name."""
    return acting_admin(require_admin_api(request), request)


AdminDep = Annotated[Admin, Depends(require_admin_change)]
