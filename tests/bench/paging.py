"""The node list's two ways out (issue 30): a page of 100, and every node page by page.

Paged reads are what a table needs; the whole list is still there, through `continue`
(pages of 1,000 summaries), and in one answer without `limit` (every node's full view):
both are timed once, from this process, while the agents report.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

PAGE_PATH = "/api/v1/nodes?limit=100"
WALK_LIMIT = 1000


def walk_all(client: httpx.Client) -> tuple[float, int, int]:
    """Every node through `continue`: (seconds, nodes listed, pages)."""
    started = time.perf_counter()
    params: dict[str, Any] = {"limit": WALK_LIMIT}
    listed = pages = 0
    while True:
        response = client.get("/api/v1/nodes", params=params)
        response.raise_for_status()
        body = response.json()
        listed += len(body["nodes"])
        pages += 1
        if body["continue"] is None:
            return time.perf_counter() - started, listed, pages
        params = {"limit": WALK_LIMIT, "continue": body["continue"]}


def whole_list(client: httpx.Client) -> tuple[float, int]:
    """The unpaged list (every node's full view) once: (seconds, bytes)."""
    started = time.perf_counter()
    response = client.get("/api/v1/nodes", headers={"Accept-Encoding": "identity"})
    response.raise_for_status()
    return time.perf_counter() - started, len(response.content)
