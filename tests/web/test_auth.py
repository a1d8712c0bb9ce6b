"""Writes need an admin and a CSRF token; nothing of it is bypassable by a crafted request."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from types import SimpleNamespace

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from itsdangerous import BadSignature

from app.settings import Settings
from app.web.auth.limiter import LoginLimiter
from app.web.auth.state import SESSION_COOKIE, AuthState
from app.web.routes import login_pages
from tests.conftest import ADMIN_TOKEN, Stack
from tests.web.test_admin_api import BEARER, TO_TS4

CM = ("ConfigMap", "nvidia-device-plugin-config", "kube-system")
PREVIEW_FORM = {"mode": "time-slicing", "replicas": "4"}


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split", agents=False)


def login(stack: Stack, token: str = ADMIN_TOKEN) -> httpx.Response:
    return stack.client.post("/login", data={"token": token}, follow_redirects=False)


def page_csrf(stack: Stack) -> str:
    html = stack.client.get("/admin/plugin").text
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the form carries a CSRF token"
    return match.group(1)


def nothing_written(stack: Stack) -> bool:
    return stack.simulator.get(*CM) is None and stack.simulator.request_count("update") == 0


def test_auth_api_write_without_credentials_is_401(stack: Stack) -> None:
    response = stack.client.put("/api/v1/plugin/config", json=TO_TS4)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert nothing_written(stack)


def test_auth_api_write_with_wrong_bearer_is_401(stack: Stack) -> None:
    response = stack.client.put(
        "/api/v1/plugin/config", json=TO_TS4, headers={"Authorization": "Bearer nope"}
    )
    assert response.status_code == 401
    assert nothing_written(stack)


def test_auth_reads_are_open_by_default(stack: Stack) -> None:
    assert stack.client.get("/api/v1/plugin/config").status_code == 200


def test_auth_reads_need_login_when_not_public(make_stack: Callable[..., Stack]) -> None:
    stack = make_stack("host-split", agents=False, public_reads=False)
    assert stack.client.get("/api/v1/plugin/config").status_code == 401
    assert stack.client.get("/api/v1/plugin/config", headers=BEARER).status_code == 200


def test_auth_login_with_wrong_token_is_refused_and_logged(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="app.web.auth"):
        response = login(stack, "wrong")
    assert response.status_code == 401
    assert "Wrong admin token" in response.text
    assert SESSION_COOKIE not in response.cookies
    assert any("login failed" in r.getMessage() for r in caplog.records)


def test_auth_login_sets_a_strict_httponly_expiring_cookie(stack: Stack) -> None:
    response = login(stack)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Max-Age=28800" in cookie
    assert "Secure" not in cookie  # plain http in the test


def test_auth_cookie_api_write_needs_the_csrf_header(stack: Stack) -> None:
    login(stack)
    url = "/api/v1/plugin/config?dryRun=true"
    assert stack.client.put(url, json=TO_TS4).status_code == 403
    forged = stack.client.put(url, json=TO_TS4, headers={"X-CSRF-Token": "forged"})
    assert forged.status_code == 403
    good = stack.client.put(url, json=TO_TS4, headers={"X-CSRF-Token": page_csrf(stack)})
    assert good.status_code == 200, good.text


def test_auth_form_post_without_or_with_forged_csrf_is_403(stack: Stack) -> None:
    login(stack)
    missing = stack.client.post("/admin/plugin/apply", data=PREVIEW_FORM)
    forged = stack.client.post("/admin/plugin/apply", data={**PREVIEW_FORM, "csrf_token": "x"})
    assert missing.status_code == 403 and forged.status_code == 403
    assert "CSRF" in forged.text
    assert nothing_written(stack)


def test_auth_form_post_without_login_is_401(stack: Stack) -> None:
    for path in (
        "/admin/plugin/preview",
        "/admin/plugin/apply",
        "/admin/changes/c-1/mode-rollback",
    ):
        response = stack.client.post(path, data={**PREVIEW_FORM, "csrf_token": "x"})
        assert response.status_code == 401, path
    assert nothing_written(stack)


def test_auth_tampered_cookie_is_anonymous(stack: Stack) -> None:
    login(stack)
    csrf = page_csrf(stack)
    value = stack.client.cookies[SESSION_COOKIE]
    stack.client.cookies.set(SESSION_COOKIE, value[:-2] + ("AA" if value[-2:] != "AA" else "BB"))
    response = stack.client.post("/admin/plugin/apply", data={**PREVIEW_FORM, "csrf_token": csrf})
    assert response.status_code == 401
    assert nothing_written(stack)


def test_auth_logout_revokes_the_session(stack: Stack) -> None:
    login(stack)
    csrf = page_csrf(stack)
    cookie = stack.client.cookies[SESSION_COOKIE]
    assert stack.client.post("/logout", data={"csrf_token": csrf}).status_code == 303
    stack.client.cookies.set(SESSION_COOKIE, cookie)  # a stolen copy keeps nothing
    response = stack.client.put(
        "/api/v1/plugin/config?dryRun=true", json=TO_TS4, headers={"X-CSRF-Token": csrf}
    )
    assert response.status_code == 401


def test_auth_failed_logins_are_rate_limited_but_the_right_token_is_never_refused(
    stack: Stack,
) -> None:
    """Behind an ingress every caller shares one address: nobody may lock the admins out."""
    for _ in range(5):
        assert login(stack, "wrong").status_code == 401
    limited = login(stack, "wrong again")
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) >= 1
    wrong_bearer = {"Authorization": "Bearer wrong"}
    refused = stack.client.put("/api/v1/plugin/config", json=TO_TS4, headers=wrong_bearer)
    assert refused.status_code == 429

    assert login(stack, ADMIN_TOKEN).status_code == 303
    bearer = stack.client.put("/api/v1/plugin/config?dryRun=true", json=TO_TS4, headers=BEARER)
    assert bearer.status_code == 200


def test_auth_proxy_headers_from_untrusted_address_are_ignored(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack(
        "host-split", agents=False, trusted_proxies=["10.0.0.0/8"], admin_group="gpu-admins"
    )
    headers = {"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "gpu-admins"}
    response = stack.client.put("/api/v1/plugin/config", json=TO_TS4, headers=headers)
    assert response.status_code == 401
    assert nothing_written(stack)


def test_auth_trusted_proxy_non_admin_is_403_admin_needs_csrf(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack(
        "host-split", agents=False, trusted_proxies=["127.0.0.1/32"], admin_group="gpu-admins"
    )
    viewer = {"X-Forwarded-User": "victor", "X-Forwarded-Groups": "viewers"}
    response = stack.client.put("/api/v1/plugin/config", json=TO_TS4, headers=viewer)
    assert response.status_code == 403
    assert "not in the admin group" in response.json()["detail"]

    admin = {"X-Forwarded-User": "ada", "X-Forwarded-Groups": "viewers, gpu-admins"}
    no_csrf = stack.client.put("/api/v1/plugin/config?dryRun=true", json=TO_TS4, headers=admin)
    assert no_csrf.status_code == 403
    html = stack.client.get("/admin/plugin", headers=admin).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert token is not None
    ok = stack.client.put(
        "/api/v1/plugin/config?dryRun=true",
        json=TO_TS4,
        headers={**admin, "X-CSRF-Token": token.group(1)},
    )
    assert ok.status_code == 200, ok.text
    other_user = {**viewer, "X-Forwarded-Groups": "gpu-admins", "X-CSRF-Token": token.group(1)}
    stolen = stack.client.put("/api/v1/plugin/config?dryRun=true", json=TO_TS4, headers=other_user)
    assert stolen.status_code == 403  # a CSRF token is bound to its user


def _login_app(settings: Settings) -> FastAPI:
    app = FastAPI()
    app.state.runtime = SimpleNamespace(settings=settings, auth=AuthState(settings))
    app.include_router(login_pages.router)
    return app


def test_auth_cookie_is_secure_over_https() -> None:
    settings = Settings(admin_token=ADMIN_TOKEN, session_secret="s" * 32)
    with TestClient(_login_app(settings), base_url="https://testserver") as http:
        response = http.post("/login", data={"token": ADMIN_TOKEN}, follow_redirects=False)
    assert response.status_code == 303
    assert "Secure" in response.headers["set-cookie"]


def test_auth_without_session_secret_uses_an_ephemeral_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="app.web.auth"):
        first = AuthState(Settings(admin_token=ADMIN_TOKEN))
        second = AuthState(Settings(admin_token=ADMIN_TOKEN))
    assert any("random secret" in r.getMessage() for r in caplog.records)
    # A session signed by one process is worthless to the next (sessions end on restart).
    cookie = first._sessions.dumps({"sid": "a", "csrf": "b"})
    with pytest.raises(BadSignature):
        second._sessions.loads(cookie)


def test_auth_login_limiter_window_slides() -> None:
    now = [0.0]
    limiter = LoginLimiter(allowed=2, window_s=60, clock=lambda: now[0])
    limiter.fail("a")
    limiter.fail("a")
    assert limiter.retry_after_s("a") == 60
    assert limiter.retry_after_s("b") is None
    now[0] = 61.0
    assert limiter.retry_after_s("a") is None
