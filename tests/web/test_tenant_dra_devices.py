"""A DRA driver (or a tenant allowed to write ResourceSlices) publishing every MIG placement:
7,560 devices on one node made megabytes of node JSON and stalled /healthz (issue 33).

The slice is created over HTTP at the (simulated) API server. The node JSON and the list of
nodes stay small (at most 64 devices a node, the rest counted), a node's devices are paged
apart with their total, the HTML node page keeps its counted view, /healthz answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.web.views.node_json import MAX_DRA_DEVICES_PAGE, NODE_JSON_MAX_DRA_DEVICES
from tests.conftest import Stack

NODE = "dra-a100-1"
PLACEMENTS = 7560


@pytest.fixture
def dra(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("dra")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 10,  # type: ignore[index]
        what="agent reports of the three nodes",
    )
    return stack


def _placements(parents: list[str]) -> Any:
    devices = [
        {
            "name": f"mig-placement-{n}",
            "attributes": {
                "type": {"string": "mig"},
                "uuid": {"string": f"MIG-{n:08x}-0000-0000-0000-000000000000"},
                "parentUUID": {"string": parents[n % len(parents)]},
                "profile": {"string": "1g.10gb"},
            },
        }
        for n in range(PLACEMENTS)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "every-placement"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": NODE,
            "pool": {"name": "every-placement", "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _healthz_answers(stack: Stack) -> None:
    started = time.monotonic()
    assert stack.client.get("/healthz").status_code == 200
    assert time.monotonic() - started < 2.0  # generous: a 20 MB render stalled it 3.5-3.9 s


def test_a_node_of_7560_dra_devices_serves_small_json_and_pages_its_devices(dra: Stack) -> None:
    before = dra.client.get(f"/api/v1/nodes/{NODE}/dra-devices").json()["total"]
    parents = [
        gpu["uuid"] for gpu in dra.client.get(f"/api/v1/nodes/{NODE}").json()["node"]["gpus"]
    ]
    url = f"{dra.simulator.url}/apis/resource.k8s.io/v1/resourceslices"
    created = httpx.post(url, json=_placements(parents), timeout=30)
    assert created.status_code == 201, created.text[:500]
    total = before + PLACEMENTS

    def published() -> bool:
        _healthz_answers(dra)  # while the devices are read and built, too
        page = dra.client.get(f"/api/v1/nodes/{NODE}/dra-devices", params={"limit": 1})
        return page.json()["total"] == total

    dra.wait(published, timeout_s=30, what="the 7,560 devices in a snapshot")

    one = dra.client.get(f"/api/v1/nodes/{NODE}")
    assert one.status_code == 200 and len(one.content) < 200_000  # megabytes before
    node = one.json()["node"]
    listed = sum(len(g["dra_devices"]) for g in node["gpus"]) + len(node["dra_devices"])
    assert listed == NODE_JSON_MAX_DRA_DEVICES
    assert node["dra_devices_omitted"] == total - NODE_JSON_MAX_DRA_DEVICES
    every = dra.client.get("/api/v1/nodes")
    assert every.status_code == 200 and len(every.content) < 500_000
    _healthz_answers(dra)

    names: list[str] = []
    for offset in range(0, total, MAX_DRA_DEVICES_PAGE):
        params = {"limit": MAX_DRA_DEVICES_PAGE, "offset": offset}
        page = dra.client.get(f"/api/v1/nodes/{NODE}/dra-devices", params=params).json()
        assert page["total"] == total and page["node"] == NODE
        names += [item["device"]["name"] for item in page["devices"]]
    assert len(names) == total
    assert {f"mig-placement-{n}" for n in range(PLACEMENTS)} <= set(names)
    too_many = {"limit": MAX_DRA_DEVICES_PAGE + 1}
    assert dra.client.get(f"/api/v1/nodes/{NODE}/dra-devices", params=too_many).status_code == 422
    assert dra.client.get("/api/v1/nodes/no-such-node/dra-devices").status_code == 404
    long_name = "n" * 254  # past a Kubernetes name: refused before any lookup
    assert dra.client.get(f"/api/v1/nodes/{long_name}").status_code == 422
    assert dra.client.get(f"/api/v1/nodes/{long_name}/dra-devices").status_code == 422
    assert dra.client.get("/api/v1/findings", params={"node": long_name}).status_code == 422

    html = dra.client.get(f"/nodes/{NODE}")
    assert 'data-testid="dra-device-count"' in html.text  # the page's counted view is kept
    assert len(html.content) < 1_000_000
    assert dra.summary()["stale"] is False
    _healthz_answers(dra)
