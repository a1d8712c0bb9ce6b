"""Security properties every response and every write route must have."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.web.http.body_limits import READ_POSTS
from tests.web.fakes import app_with_world
from tests.web.routes import api_routes

# Writes that authenticate by other means than an admin session or admin token.
OWN_AUTH_WRITES = {("POST", "/api/v1/agent/reports"), ("POST", "/login")}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app_with_world()) as test_client:
        yield test_client


@pytest.mark.parametrize(
    "path", ["/", "/findings", "/api/v1/summary", "/healthz", "/metrics", "/static/css/app.css"]
)
def test_every_response_carries_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"


def test_api_docs_are_served_from_local_assets(client: TestClient) -> None:
    page = client.get("/docs").text
    assert "/static/vendor/swagger-ui-5.35.0/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower()
    assert client.get("/static/vendor/swagger-ui-5.35.0/swagger-ui-bundle.js").status_code == 200


def write_routes(app: FastAPI) -> list[tuple[str, str]]:
    routes = []
    for path, route in api_routes(app):
        for method in sorted(route.methods - {"GET", "HEAD", "OPTIONS"}):
            # questions sent as POST that write nothing are reads (tests/web/test_fit_api.py)
            if (method, path) not in OWN_AUTH_WRITES and path not in READ_POSTS:
                routes.append((method, path))
    assert len(routes) >= 5  # the walk must find the admin writes (FastAPI nests routers)
    return routes


def test_every_write_route_refuses_unauthenticated_requests() -> None:
    app = app_with_world()
    # The forged bearer tokens are failed authentications: after enough of them the
    # limiter refuses the address (429), a refusal too.
    refused = (401, 403, 429)
    seen = []
    with TestClient(app) as anonymous:
        for method, path in write_routes(app):
            url = path.replace("{", "").replace("}", "")
            response = anonymous.request(method, url, json={"mode": "basic"})
            seen.append(response.status_code)
            assert response.status_code in refused, (method, path, response.status_code)
            forged = anonymous.request(
                method,
                url,
                json={"mode": "basic"},
                headers={
                    "Authorization": "Bearer not-the-token",
                    "X-Forwarded-User": "admin",
                    "X-Forwarded-Groups": "system:masters",
                },
            )
            assert forged.status_code in refused, (method, path, forged.status_code)
    assert set(seen[:5]) <= {401, 403}  # the first ones are refused for what they are
