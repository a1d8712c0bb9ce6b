"""The overview of a big cluster: a compact node table, 100 lines a page, filters on the server."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.web.views.filters import FilterError
from app.web.views.node_window import parse_page, window
from tests.web.page_snapshots import big_cluster, demo_like, page_app


def rows(html: str) -> list[str]:
    return re.findall(r'data-testid="node-row-([^"]+)"', html)


def test_a_big_cluster_gets_one_line_per_node_100_a_page() -> None:
    app, _ = page_app(big_cluster(250))
    with TestClient(app) as client:
        first = client.get("/?lang=en").text
        third = client.get("/?lang=en&page=3").text
        beyond = client.get("/?lang=en&page=9").text

    assert len(rows(first)) == 100
    assert rows(first)[0] == "gpu-000" and rows(first)[-1] == "gpu-099"
    assert "Nodes 1-100 of 250" in first
    assert "Page 1 of 3" in first and 'rel="next" href="/?lang=en&amp;page=2"' in first
    assert 'class="slot ' not in first  # no per-GPU grid on the list: it is on the node page
    assert rows(third) == [f"gpu-{index:03d}" for index in range(200, 250)]
    assert 'rel="prev" href="/?lang=en&amp;page=2"' in third and 'rel="next"' not in third
    assert rows(beyond) == rows(third)  # past the end: the last page


def test_filters_are_applied_before_paging_and_kept_by_the_pager() -> None:
    app, _ = page_app(big_cluster(250))
    with TestClient(app) as client:
        found = client.get("/?lang=en&q=1").text

    assert rows(found)[:3] == ["gpu-001", "gpu-010", "gpu-011"]
    assert "Nodes 1-100 of 133" in found  # 250 names, 117 of them without a "1"
    assert 'href="/?q=1&amp;lang=en&amp;page=2"' in found


def test_a_small_cluster_keeps_its_cards_with_gpu_grids() -> None:
    app, _ = page_app(demo_like())
    with TestClient(app) as client:
        page = client.get("/?lang=en").text

    assert 'data-testid="node-table"' not in page
    assert 'class="slot ' in page


def test_a_bad_page_number_is_refused_with_the_reason() -> None:
    app, _ = page_app(big_cluster(30))
    with TestClient(app) as client:
        response = client.get("/?lang=en&page=zero")

    assert response.status_code == 400
    assert "page must be a whole number from 1 to <code>100000</code>" in response.text


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "100001", "x"])
def test_parse_page_refuses(text: str) -> None:
    with pytest.raises(FilterError):
        parse_page({"page": text})


def test_window_positions() -> None:
    nodes = big_cluster(205).nodes
    last = window(nodes, 3)

    assert (last.page, last.pages, last.first, last.last, last.total) == (3, 3, 201, 205, 205)
    assert window(nodes[:24], 5).compact is False
