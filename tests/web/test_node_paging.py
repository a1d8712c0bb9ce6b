"""GET /api/v1/nodes a page at a time (issue 30): `limit` and `continue` as the Kubernetes
API lists, node summaries by default when paged, the whole list still reachable."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests import factories as f
from tests.conftest import runtime_of, stack_settings
from tests.domain.worlds import world
from tests.web.fakes import FakeSource

NAMES = sorted(f"gpu-{i:02d}" for i in range(23))


@pytest.fixture(scope="module")
def client() -> TestClient:
    state = world(nodes=[f.node(name, allocatable=4) for name in NAMES])
    source = FakeSource(
        nodes=list(state.nodes),
        pods=list(state.pods),
        daemonsets=[state.daemonset] if state.daemonset else [],
    )
    app = create_app(stack_settings(), source=source)
    runtime_of(app).snapshots.rebuild()
    return TestClient(app)


def _pages(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    pages = [client.get("/api/v1/nodes", params=params).json()]
    while pages[-1]["continue"] is not None:
        assert len(pages) < 30, "continue never ends"
        following = {**params, "continue": pages[-1]["continue"]}
        response = client.get("/api/v1/nodes", params=following)
        assert response.status_code == 200, response.text
        pages.append(response.json())
    return pages


def test_pages_of_five_list_every_node_once_in_name_order(client: TestClient) -> None:
    pages = _pages(client, limit=5)
    assert [len(p["nodes"]) for p in pages] == [5, 5, 5, 5, 3]
    assert [p["remaining"] for p in pages] == [18, 13, 8, 3, 0]
    assert [n["name"] for p in pages for n in p["nodes"]] == NAMES


def test_a_paged_list_gives_summaries_and_full_views_on_request(client: TestClient) -> None:
    summary = client.get("/api/v1/nodes", params={"limit": 2}).json()["nodes"][0]
    assert summary["name"] == "gpu-00"
    assert (summary["allocatable"], summary["requested"], summary["free"]) == (4, 0, 4)
    assert "gpus" not in summary and "findings" not in summary
    full = client.get("/api/v1/nodes", params={"limit": 2, "fields": "full"}).json()["nodes"][0]
    whole = client.get("/api/v1/nodes/gpu-00").json()["node"]
    assert full == whole


def test_without_limit_the_list_is_whole_and_full_as_before_paging(client: TestClient) -> None:
    body = client.get("/api/v1/nodes").json()
    assert [n["name"] for n in body["nodes"]] == NAMES
    assert "gpus" in body["nodes"][0]
    assert (body["continue"], body["remaining"]) == (None, 0)


def test_full_pages_join_into_the_whole_list(client: TestClient) -> None:
    whole = client.get("/api/v1/nodes").json()["nodes"]
    paged = [n for p in _pages(client, limit=7, fields="full") for n in p["nodes"]]
    assert paged == whole


@pytest.mark.parametrize("token", ["not-base64!", "eyJ2IjoyfQ", "W10", "x" * 2000])
def test_a_continue_token_this_api_did_not_write_is_422(client: TestClient, token: str) -> None:
    response = client.get("/api/v1/nodes", params={"limit": 5, "continue": token})
    assert response.status_code == 422
    assert "continue" in response.json()["detail"]


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_a_limit_out_of_range_is_422(client: TestClient, limit: int) -> None:
    assert client.get("/api/v1/nodes", params={"limit": limit}).status_code == 422


def test_a_node_deleted_between_pages_does_not_lose_the_next_ones() -> None:
    state = world(nodes=[f.node(name, allocatable=4) for name in NAMES])
    source = FakeSource(nodes=list(state.nodes), daemonsets=[state.daemonset])
    app = create_app(stack_settings(), source=source)
    runtime = runtime_of(app)
    runtime.snapshots.rebuild()
    client = TestClient(app)
    first = client.get("/api/v1/nodes", params={"limit": 5}).json()
    source.set("nodes", [n for n in state.nodes if n["metadata"]["name"] != "gpu-04"])
    runtime.snapshots.rebuild()
    second = client.get("/api/v1/nodes", params={"limit": 5, "continue": first["continue"]})
    assert [n["name"] for n in second.json()["nodes"]] == NAMES[5:10]
