"""Every route of the app against GEO_MLOPS_PUBLIC_READS: no route can forget its guard."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.testclient import TestClient
from starlette.routing import Mount, Route

from tests.conftest import ADMIN_TOKEN
from tests.web.fakes import app_with_world
from tests.web.routes import all_routes, api_routes

# The only GET routes anyone may read with reads closed: probes, the way in, assets.
OPEN_READS = {"/healthz", "/readyz", "/login"}
# Reads that authenticate by their own token, not a reader's or an admin's
# (app/web/routes/peers.py).
OWN_AUTH_READS = {"/api/v1/peer/reports"}
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
NODE = "gpu-1"


def get_paths(app: FastAPI) -> list[str]:
    """Every GET route of the app, path parameters filled in."""
    paths = []
    for path, route in all_routes(app):
        if isinstance(route, Route) and "GET" in (route.methods or set()):
            paths.append(path.replace("{name}", NODE).replace("{code}", "ko"))
    return sorted(set(paths))


@pytest.fixture
def closed() -> Iterator[TestClient]:
    with TestClient(app_with_world(public_reads=False)) as client:
        yield client


def test_guard_walk_finds_the_routes_it_must_check(closed: TestClient) -> None:
    paths = get_paths(closed.app)  # type: ignore[arg-type]
    for expected in ("/", "/api/v1/summary", "/metrics", "/docs", "/openapi.json", "/findings"):
        assert expected in paths
    assert len(paths) >= 20
    mounts = [path for path, route in all_routes(closed.app) if isinstance(route, Mount)]  # type: ignore[arg-type]
    assert mounts == ["/static"]


def test_closed_reads_every_get_route_refuses_anonymous_callers(closed: TestClient) -> None:
    answered = {}
    for path in get_paths(closed.app):  # type: ignore[arg-type]
        if path in OPEN_READS:
            continue
        response = closed.get(path, follow_redirects=False)
        location = response.headers.get("location", "")
        refused = response.status_code == 401 or (
            response.status_code == 303 and location.startswith("/login")
        )
        answered[path] = (response.status_code, location)
        assert refused, (path, response.status_code, location)
    assert answered["/"] == (303, "/login?next=%2F")
    assert answered["/api/v1/summary"] == (401, "")
    assert answered["/fragments/overview"] == (401, "")
    assert answered["/lang/ko"] == (303, "/login")


def test_closed_reads_open_routes_answer_without_login(closed: TestClient) -> None:
    for path in sorted(OPEN_READS):
        assert closed.get(path).status_code == 200, path
    assert closed.get("/static/css/app.css").status_code == 200


def test_closed_reads_every_get_route_opens_to_the_admin(closed: TestClient) -> None:
    for path in set(get_paths(closed.app)) - OWN_AUTH_READS:  # type: ignore[arg-type]
        response = closed.get(path, headers=BEARER, follow_redirects=False)
        assert response.status_code not in (401, 403), (path, response.status_code)


def test_closed_reads_a_non_admin_bearer_is_refused_without_counting_as_a_failed_login(
    closed: TestClient,
) -> None:
    for _ in range(20):  # far past the 5 failures that lock an address out of logins
        assert (
            closed.get("/api/v1/summary", headers={"Authorization": "Bearer nope"}).status_code
            == 401
        )
    login = closed.post("/login", data={"token": "still wrong"}, follow_redirects=False)
    assert login.status_code == 401  # not 429: the reads above were not failed logins


def test_open_reads_every_get_route_answers_anonymous_callers() -> None:
    with TestClient(app_with_world()) as client:
        for path in set(get_paths(client.app)) - OWN_AUTH_READS:  # type: ignore[arg-type]
            response = client.get(path, follow_redirects=False)
            assert response.status_code not in (401, 403), (path, response.status_code)
        for path in OWN_AUTH_READS:  # the peer token only: neither anonymous nor an admin
            assert client.get(path).status_code == 401
            assert client.get(path, headers=BEARER).status_code == 401


def test_metrics_token_is_what_prometheus_sends() -> None:
    with TestClient(app_with_world(metrics_token="scrape-me-0123456789")) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        scraped = client.get("/metrics", headers={"Authorization": "Bearer scrape-me-0123456789"})
        assert scraped.status_code == 200
        assert "gpu_slots_free" in scraped.text
        assert client.get("/metrics", headers=BEARER).status_code == 200  # an admin may look
        assert client.get("/api/v1/summary").status_code == 200  # other reads stay public


def query_params(dependant: Dependant) -> list[str]:
    """Every query parameter of a route, its dependencies' included."""
    names = [param.alias for param in dependant.query_params]
    for sub in dependant.dependencies:
        names += query_params(sub)
    return names


HOSTILE_QUERY_VALUES = ["nan", "inf", "-inf", "-1", "1e309", "x" * 5000, "\x00", "[]", ""]


def test_every_query_parameter_is_validated_no_500() -> None:
    """Issue 15: `?refresh_s=nan` answered 500 on every page."""
    app = app_with_world()
    with TestClient(app, raise_server_exceptions=False) as client:
        for route_path, route in api_routes(app):
            if "GET" not in route.methods:
                continue
            path = route_path.replace("{name}", NODE).replace("{code}", "ko")
            for param in query_params(route.dependant):
                for value in HOSTILE_QUERY_VALUES:
                    response = client.get(path, params={param: value}, headers=BEARER)
                    assert response.status_code < 500, (path, param, value)
        page = client.get("/?refresh_s=nan")
        assert page.status_code == 422
        assert client.get("/?refresh_s=0.5").status_code == 200


def test_closed_reads_login_goes_back_to_the_page_asked_for(closed: TestClient) -> None:
    redirect = closed.get("/nodes/gpu-1", follow_redirects=False)
    assert redirect.headers["location"] == "/login?next=%2Fnodes%2Fgpu-1"
    form = closed.get(redirect.headers["location"]).text
    assert 'action="/login?lang=en&amp;next=/nodes/gpu-1"' in form
    login = closed.post(
        "/login?lang=en&next=%2Fnodes%2Fgpu-1",
        data={"token": ADMIN_TOKEN},
        follow_redirects=False,
    )
    assert login.status_code == 303
    assert login.headers["location"] == "/nodes/gpu-1?lang=en"
    assert closed.get("/nodes/gpu-1").status_code == 200
