"""Reports that cannot hurt, and agents bound to their node (issue 15, over HTTP).

Each test names the failure it reproduces; the app runs without its lifespan, so snapshot
builds happen when the test calls `rebuild()`, against a clock the test holds.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.node_tokens import node_token
from app.web.app import create_app
from tests import factories as f
from tests.conftest import AGENT_TOKEN, runtime_of, stack_settings
from tests.web.fakes import FakeSource

URL = "/api/v1/agent/reports"
NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
SECRET = "node-secret-0123456789abcdef"
SHARED = {"Authorization": f"Bearer {AGENT_TOKEN}"}


def auth_for(node: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {node_token(SECRET, node)}"}


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def gpu(number: int, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "index": number,
        "uuid": f"GPU-{number:08x}-1111-2222-3333-444455556666",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_total_mib": 81920,
        "memory_used_mib": 1000,
        "utilization_pct": 3,
        "processes": [],
    }
    body.update(overrides)
    return body


def report(
    node: str = "gpu-1", *, at: datetime = NOW, gpus: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "schema": 1,
        "node": node,
        "collected_at": at.isoformat(),
        "source": "nvml",
        "gpus": gpus if gpus is not None else [gpu(0), gpu(1)],
    }


def make_app(clock: Clock, **settings: object) -> FastAPI:
    values: dict[str, object] = {"agent_auth": "node-token", "agent_node_secret": SECRET}
    values.update(settings)
    state = f.cluster(
        daemonset=f.plugin_daemonset(),
        nodes=[f.node("gpu-1"), f.node("gpu-2")],
        pods=[f.plugin_pod("gpu-1"), f.plugin_pod("gpu-2")],
    )
    source = FakeSource(
        nodes=list(state.nodes), pods=list(state.pods), daemonsets=[state.daemonset]
    )
    app = create_app(stack_settings(**values), source=source, clock=clock)
    runtime_of(app).snapshots.rebuild()
    return app


def stored_at(app: FastAPI, node: str = "gpu-1") -> datetime | None:
    stored = runtime_of(app).reports.latest().get(node)
    return None if stored is None else stored.report.collected_at


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(clock: Clock) -> FastAPI:
    app = make_app(clock)
    client = TestClient(app)
    assert (
        client.post(
            URL, json=report(at=NOW - timedelta(seconds=5)), headers=auth_for("gpu-1")
        ).status_code
        == 202
    )
    return app


def post(app: FastAPI, body: dict[str, Any], node: str = "gpu-1") -> Any:
    return TestClient(app).post(URL, content=json.dumps(body), headers=auth_for(node))


# ------------------------------------------------------------------ numbers and types


@pytest.mark.parametrize(
    ("why", "gpus"),
    [
        ("process memory 10**400", [gpu(0, processes=[{"pid": 1, "used_memory_mib": 10**400}])]),
        ("memory_total 10**400", [gpu(0, memory_total_mib=10**400)]),
        ("memory_used past 1 TiB", [gpu(0, memory_used_mib=(1 << 20) + 1)]),
        ("utilization 101 %", [gpu(0, utilization_pct=101)]),
        ("pid past pid_max", [gpu(0, processes=[{"pid": 1 << 23}])]),
        ("index as a string", [gpu(0, index="0")]),
        ("memory as a float", [gpu(0, memory_total_mib=81920.0)]),
        ("64 GPUs with one UUID and index", [gpu(0) for _ in range(64)]),
        ("two GPUs with one UUID", [gpu(0), gpu(1, uuid=gpu(0)["uuid"])]),
        ("two GPUs with one index", [gpu(0), gpu(1, index=0)]),
        ("a UUID with shell syntax", [gpu(0, uuid="GPU-x$(touch${IFS}pwned)")]),
        ("a UUID without GPU-", [gpu(0, uuid="0000-1111")]),
    ],
)
def test_report_beyond_its_bounds_is_422_and_the_previous_report_stays(
    app: FastAPI, why: str, gpus: list[dict[str, Any]]
) -> None:
    response = post(app, report(gpus=gpus))
    assert response.status_code == 422, why
    assert stored_at(app) == NOW - timedelta(seconds=5)
    snapshot = runtime_of(app).snapshots.rebuild()
    assert runtime_of(app).snapshots.last_error is None
    assert [n.physical_gpus for n in snapshot.nodes if n.name == "gpu-1"] == [2]


def test_report_from_the_future_is_422_and_the_real_agent_goes_on(
    app: FastAPI, clock: Clock
) -> None:
    """Issue 15: a report dated 2099 was stored and the real agent got 409 until restart."""
    response = post(app, report(at=datetime(2099, 1, 1, tzinfo=UTC)))
    assert response.status_code == 422
    assert "ahead of the dashboard's clock" in response.json()["detail"]
    clock.now = NOW + timedelta(seconds=15)
    assert post(app, report(at=clock.now)).status_code == 202
    assert stored_at(app) == clock.now


def test_report_within_the_clock_skew_is_accepted(app: FastAPI) -> None:
    assert post(app, report(at=NOW + timedelta(seconds=60))).status_code == 202


# ------------------------------------------------------------------ agents bound to nodes


def test_report_for_another_node_with_this_nodes_token_is_403(app: FastAPI) -> None:
    response = post(app, report("gpu-2"), node="gpu-1")
    assert response.status_code == 403
    assert response.json()["detail"] == "This agent's token is for node 'gpu-1', not 'gpu-2'."
    assert stored_at(app, "gpu-2") is None


def test_node_token_of_another_secret_is_401(app: FastAPI) -> None:
    forged = {"Authorization": f"Bearer {node_token('another-secret', 'gpu-1')}"}
    response = TestClient(app).post(URL, json=report(), headers=forged)
    assert response.status_code == 401


def test_shared_token_is_refused_unless_opted_in(clock: Clock) -> None:
    closed = make_app(clock, agent_token=AGENT_TOKEN)
    assert TestClient(closed).post(URL, json=report(), headers=SHARED).status_code == 401
    opted_in = make_app(clock, agent_token=AGENT_TOKEN, agent_auth="node-token,shared-token")
    assert TestClient(opted_in).post(URL, json=report("gpu-2"), headers=SHARED).status_code == 202


# ------------------------------------------------------------------ nodes that do not exist


def test_reports_of_made_up_nodes_take_bounded_space_and_go_when_stale(
    app: FastAPI, clock: Clock
) -> None:
    """Issue 15: 200 made-up node names grew memory without bound and were never freed."""
    opted_in = make_app(clock, agent_token=AGENT_TOKEN, agent_auth="shared-token")
    client = TestClient(opted_in)
    for index in range(200):
        body = report(f"made-up-{index}", gpus=[gpu(i) for i in range(8)])
        assert client.post(URL, json=body, headers=SHARED).status_code == 202
    assert client.post(URL, json=report("gpu-1"), headers=SHARED).status_code == 202
    store = runtime_of(opted_in).reports
    assert store.unknown_nodes == 64
    assert "made-up-199" in store.latest() and "made-up-135" not in store.latest()
    assert "gpu-1" in store.latest()

    clock.now = NOW + timedelta(seconds=91)  # agent_stale_after_s is 90
    runtime_of(opted_in).snapshots.rebuild()
    assert sorted(store.latest()) == ["gpu-1"]
