"""Sessions end when they should, and the caller's address is the configured truth (issue 15)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.web.server import uvicorn_config
from tests.conftest import ADMIN_TOKEN, Stack
from tests.web.fakes import app_with_world

SECRET = "session-secret-0123456789abcdef"
TS4 = {"mode": "time-slicing", "replicas": 4}


def login(client: TestClient, token: str = ADMIN_TOKEN) -> int:
    return client.post("/login", data={"token": token}, follow_redirects=False).status_code


def csrf(client: TestClient) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/admin/plugin").text)
    assert match, "the form carries a CSRF token"
    return match.group(1)


def write_status(client: TestClient, token: str) -> int:
    """401 without a valid session; 503 with one (writes are not enabled in this app)."""
    response = client.put(
        "/api/v1/plugin/config?dryRun=true", json=TS4, headers={"X-CSRF-Token": token}
    )
    return response.status_code


def test_changing_the_admin_token_ends_the_sessions_made_with_the_old_one(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "admin-token"
    token_file.write_text("first-admin-token-0123456789\n")
    app = app_with_world(admin_token=None, admin_token_file=token_file, session_secret=SECRET)
    with TestClient(app) as client:
        assert login(client, "first-admin-token-0123456789") == 303
        token = csrf(client)
        assert write_status(client, token) == 503
        disabled = client.put(
            "/api/v1/plugin/config?dryRun=true&lang=ko", json=TS4, headers={"X-CSRF-Token": token}
        )
        assert disabled.json()["detail"] == "이 서버에서는 플러그인 변경이 켜져 있지 않습니다."

        token_file.write_text("second-admin-token-0123456789\n")

        assert write_status(client, token) == 401
        assert login(client, "first-admin-token-0123456789") == 401
        assert login(client, "second-admin-token-0123456789") == 303


def test_logout_survives_a_restart(tmp_path: Path) -> None:
    revoked = tmp_path / "revoked-sessions.json"
    settings = {"session_secret": SECRET, "session_revocations_file": revoked}
    with TestClient(app_with_world(**settings)) as client:
        assert login(client) == 303
        token = csrf(client)
        cookie = client.cookies["gpu_slots_session"]
        assert client.post("/logout", data={"csrf_token": token}).status_code == 200
    assert revoked.exists()

    with TestClient(app_with_world(**settings)) as restarted:  # a new process, same secret
        restarted.cookies.set("gpu_slots_session", cookie)
        assert write_status(restarted, token) == 401
        assert login(restarted) == 303  # a new login works
        assert write_status(restarted, csrf(restarted)) == 503


def test_uvicorn_never_rewrites_the_client_from_forwarded_headers() -> None:
    """Uvicorn's default trusts X-Forwarded-For from 127.0.0.1; the dashboard's does not."""
    config = uvicorn_config(app_with_world(), host="127.0.0.1", port=0)
    assert config.proxy_headers is False
    config.load()
    assert not isinstance(config.loaded_app, ProxyHeadersMiddleware)


def lock_out(client: TestClient, headers: dict[str, str]) -> int:
    """Five wrong logins, then the status of a sixth."""
    for _ in range(5):
        client.post("/login", data={"token": "wrong"}, headers=headers)
    return client.post("/login", data={"token": "wrong"}, headers=headers).status_code


def test_forwarded_for_from_loopback_is_ignored_by_default() -> None:
    """Issue 15: X-Forwarded-For from loopback beat the login rate limiter."""
    app = app_with_world()
    with TestClient(app, client=("127.0.0.1", 5000)) as client:
        for index in range(6):
            spoofed = {"X-Forwarded-For": f"203.0.113.{index}"}
            status = client.post("/login", data={"token": "wrong"}, headers=spoofed).status_code
        assert status == 429  # all six counted against 127.0.0.1


def test_forwarded_for_from_a_configured_proxy_names_the_client() -> None:
    app = app_with_world(trusted_proxies=["127.0.0.1/32"])
    with TestClient(app, client=("127.0.0.1", 5000)) as client:
        assert lock_out(client, {"X-Forwarded-For": "203.0.113.7"}) == 429
        other = {"X-Forwarded-For": "203.0.113.8"}
        assert client.post("/login", data={"token": "wrong"}, headers=other).status_code == 401
        # Only the right-most untrusted hop counts: a client cannot pick its own address.
        chained = {"X-Forwarded-For": "198.51.100.1, 203.0.113.7"}
        assert client.post("/login", data={"token": "wrong"}, headers=chained).status_code == 429


@pytest.mark.parametrize(("proxies", "expected"), [([], 401), (["127.0.0.1/32"], 403)])
def test_sidecar_proxy_on_loopback_is_trusted_only_when_configured(
    proxies: list[str], expected: int
) -> None:
    """Issue 15: a configured sidecar proxy on 127.0.0.1 was silently not trusted."""
    app = app_with_world(trusted_proxies=proxies, admin_group="gpu-admins")
    with TestClient(app, client=("127.0.0.1", 5000)) as client:
        headers = {
            "X-Forwarded-User": "ada",
            "X-Forwarded-Groups": "gpu-admins",
            "X-Forwarded-For": "203.0.113.9",
        }
        response = client.put("/api/v1/plugin/config?dryRun=true", json=TS4, headers=headers)
        # Trusted: ada is an admin, and only her missing CSRF token is refused (403).
        assert response.status_code == expected, response.text


def test_live_server_trusts_a_configured_sidecar_and_no_one_else(
    make_stack: Callable[..., Stack],
) -> None:
    """Over real HTTP: uvicorn used to replace 127.0.0.1 by the X-Forwarded-For address."""
    headers = {
        "X-Forwarded-User": "ada",
        "X-Forwarded-Groups": "gpu-admins",
        "X-Forwarded-For": "203.0.113.9",
    }
    trusted = make_stack(
        "host-split", agents=False, trusted_proxies=["127.0.0.1/32"], admin_group="gpu-admins"
    )
    response = trusted.client.put("/api/v1/plugin/config?dryRun=true", json=TS4, headers=headers)
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]

    untrusted = make_stack("host-split", agents=False, admin_group="gpu-admins")
    response = untrusted.client.put("/api/v1/plugin/config?dryRun=true", json=TS4, headers=headers)
    assert response.status_code == 401
