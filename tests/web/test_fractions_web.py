"""GPU fractions through the dashboard: the node's JSON and page, and usage (issue 22)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests import factories as f
from tests.conftest import AGENT_TOKEN, runtime_of, stack_settings
from tests.web.fakes import FakeSource

RESERVATION = "kai-resource-reservation/gpu-reservation-gpu-1-g1"


@pytest.fixture
def client() -> TestClient:
    gpu0 = f.gpu_uuid("gpu-1", 0)
    pods = [
        f.plugin_pod("gpu-1"),
        f.reservation_pod("g1", gpu0),
        f.fraction_pod("a", annotations={"gpu-fraction": "0.5"}, group="g1"),
        f.fraction_pod("b", annotations={"gpu-memory": "20480"}, group="g1", namespace="serving"),
    ]
    readings = [
        f.gpu(
            0,
            processes=[
                f.proc(11, mib=30000, pod_uid="uid-a"),
                f.proc(12, mib=25000, pod_uid="uid-b"),
            ],
        ),
        *[f.gpu(i) for i in range(1, 4)],
    ]
    source = FakeSource(
        nodes=[f.node("gpu-1", allocatable=4)], pods=pods, daemonsets=[f.plugin_daemonset()]
    )

    def clock() -> datetime:
        return f.NOW

    app = create_app(stack_settings(), source=source, clock=clock)
    test_client = TestClient(app)
    body = f.report("gpu-1", readings).report.model_dump(mode="json", by_alias=True)
    answer = test_client.post(
        "/api/v1/agent/reports", json=body, headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
    )
    assert answer.status_code == 202, answer.text
    runtime_of(app).snapshots.rebuild()
    return test_client


def _node(client: TestClient) -> dict[str, Any]:
    answer = client.get("/api/v1/nodes/gpu-1")
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()["node"]
    return found


def test_api_node_fraction_holders_with_share_and_no_bypass(client: TestClient) -> None:
    node = _node(client)
    holders = [
        (h["pod"], h["source"], h["slots"], h["share"], h["memory_limit_mib"], h["assignment"])
        for h in node["gpus"][0]["holders"]
    ]
    assert holders == [
        (RESERVATION, "device-plugin", 1, None, None, "inferred"),
        ("ml/a", "fraction", 0, 0.5, 40960, "reservation"),
        ("serving/b", "fraction", 0, 0.25, 20480, "reservation"),
    ]
    assert [(p["pod"], p["resource"], p["slots"], p["share"]) for p in node["pods"]] == [
        (RESERVATION, "nvidia.com/gpu", 1, None),
        ("ml/a", "gpu-fraction", 0, 0.5),
        ("serving/b", "gpu-memory", 0, 0.25),
    ]
    assert (node["requested"], node["free"]) == (1, 3)
    # serving/b uses 25,000 MiB of its 20,480: the only finding; nobody is a bypasser.
    assert [(x["code"], x["pod"]) for x in node["findings"]] == [
        ("gpu-fraction-memory-over-limit", "serving/b")
    ]


def test_api_usage_fraction_pods_counted_by_share(client: TestClient) -> None:
    usage = client.get("/api/v1/usage", params={"by": "namespace"}).json()
    rows = {
        r["key"]: (r["slots_held"], r["pods"], r["gpu_share"], r["memory_used_mib"])
        for r in usage["rows"]
    }
    assert rows == {
        # the reservation pod holds the whole GPU's slot; the fractions are shares of it
        "kai-resource-reservation": (1, 1, 1.0, 0),
        "ml": (0, 1, 0.5, 30000),
        "serving": (0, 1, 0.25, 25000),
    }
    pods = {p["pod"]: (p["slots"], p["gpu_share"], p["gpus"]) for p in usage["pods"]}
    assert pods == {
        RESERVATION: (1, 1.0, [0]),
        "ml/a": (0, 0.5, [0]),
        "serving/b": (0, 0.25, [0]),
    }


def test_pages_node_and_usage_show_the_fractions(client: TestClient) -> None:
    detail = client.get("/nodes/gpu-1").text
    gpu0 = f.gpu_uuid("gpu-1", 0)
    assert f'data-testid="fractions-{gpu0}"' in detail
    assert "ml/a: 0.5 of the GPU, up to 40.0 GiB (KAI reservation)" in detail
    assert "serving/b: 0.25 of the GPU, up to 20.0 GiB (KAI reservation)" in detail
    assert '<td><code>gpu-fraction</code></td><td class="num">0.5 GPU</td><td>0</td>' in detail
    korean = client.get("/nodes/gpu-1", params={"lang": "ko"}).text
    assert "ml/a: GPU의 0.5, 최대 40.0 GiB (KAI 예약)" in korean
    usage = client.get("/usage").text
    assert '<td class="num" data-testid="usage-share">0.5</td>' in usage
    assert '<td class="num" data-testid="pod-share">0.25</td>' in usage
