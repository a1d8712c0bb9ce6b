"""Paged lists (app/kube/pages.py) against the simulator: every page once, in order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client
from urllib3 import BaseHTTPResponse

from app.kube.client import make_api_client
from app.kube.pages import pages
from app.simulator.world.cluster import SimulatedCluster

NAMES = [f"cm-{i:02d}" for i in range(10)]


@pytest.fixture(scope="module")
def core() -> Iterator[client.CoreV1Api]:
    sim = SimulatedCluster("host-split")
    url = sim.start()
    api = client.CoreV1Api(make_api_client(host=url))
    api.create_namespace({"metadata": {"name": "many"}})
    for name in NAMES:
        api.create_namespaced_config_map("many", {"metadata": {"name": name}})
    yield api
    sim.stop()


def _page(core: client.CoreV1Api, token: str | None) -> bytes:
    kwargs: dict[str, Any] = {"limit": 4, "_preload_content": False}
    if token:
        kwargs["_continue"] = token
    # with _preload_content=False the client hands back urllib3's answer, not the typed list
    answer = cast(BaseHTTPResponse, core.list_namespaced_config_map("many", **kwargs))
    return answer.data


def test_pages_ask_for_each_page_once_in_order(core: client.CoreV1Api) -> None:
    asked: list[str | None] = []

    def fetch(token: str | None) -> bytes:
        asked.append(token)
        return _page(core, token)

    listed = [item["metadata"]["name"] for body in pages(fetch) for item in body["items"]]
    assert listed == NAMES
    assert len(asked) == 3 and asked[0] is None and len(set(asked)) == 3  # 4 + 4 + 2
