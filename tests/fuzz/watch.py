"""What every fuzzed request is held to: no 5xx, an answer within a second, and a refused
request writes nothing (issue 48).

The example counts are fixed here, in the repository, so a run is the same size on every
machine and docs/TESTING.md can state them; Hypothesis's database is off and its seed
derandomized, so two runs on one commit try the same inputs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import httpx
from hypothesis import HealthCheck, settings

from app.simulator.world.cluster import SimulatedCluster
from app.web.server import build_app
from tests.conftest import ADMIN_TOKEN, AGENT_TOKEN, Stack, stack_settings
from tests.live import LiveServer, stop_together, wait_for

T = TypeVar("T")

# Examples per run (docs/TESTING.md, "The fuzz tier"): change them here only.
OPENAPI_EXAMPLES = 12  # per operation of the OpenAPI document, per caller (anonymous, admin)
CHAIN_EXAMPLES = 25  # change chains (preview -> apply, split -> undo), of up to CHAIN_STEPS
CHAIN_STEPS = 8
TENANT_EXAMPLES = 25  # hostile tenant objects created in the simulator, each kind
REAL_SAMPLE_EXAMPLES = 8  # of those, pods and claims, on the real control plane (tests/real)

SLOW_S = 1.0  # no answer, and no /healthz while one is made, takes longer than this
# but an applied write: it answers once the watch cache holds what it wrote (`settle`, at
# most 2 s) and, for a split, once the node's old plugin pod has left (the hand-over; the
# simulator's pods leave at once), docs/ADMIN.md; an applied write is held to this
APPLIED_S = 5.0
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
AGENT = {"Authorization": f"Bearer {AGENT_TOKEN}"}


def fuzz_settings(examples: int, **more: Any) -> settings:
    """Fixed-size, reproducible Hypothesis settings for a test against a live stack."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        **more,
    )


@contextmanager
def live_stack(scenario: str, **overrides: object) -> Iterator[Stack]:
    """A simulator and a dashboard on it, for a whole module (the tier runs one at a time)."""
    simulator = SimulatedCluster(scenario)
    simulator_url = simulator.start(host="127.0.0.1", port=0)
    app = build_app(
        stack_settings(**overrides),
        kube_server=simulator_url,
        refresh_interval_s=0.5,
        retry_delay_s=0.1,
    )
    server = LiveServer(app)
    url = server.start()
    simulator.configure_agents(report_to=url, token=AGENT_TOKEN, interval_s=0.5)
    client = httpx.Client(base_url=url, timeout=30)
    wait_for(lambda: client.get("/readyz").status_code == 200, what="dashboard ready")
    try:
        yield Stack(simulator=simulator, app=app, dashboard_url=url, client=client)
    finally:
        client.close()
        stop_together(server.stop, simulator.stop)


def written_state(stack: Stack) -> str:
    """What a change writes, read from the API server: the plugin DaemonSets' specs and
    annotations, every ConfigMap's data and labels, Node labels, the change Events."""
    base = stack.simulator.url
    parts: list[Any] = []
    with httpx.Client(base_url=base, timeout=10) as api:
        for path in ("/apis/apps/v1/daemonsets", "/api/v1/configmaps", "/api/v1/nodes"):
            for item in api.get(path).json()["items"]:
                meta = item["metadata"]
                parts.append(
                    [
                        path,
                        meta.get("namespace"),
                        meta["name"],
                        meta.get("labels"),
                        meta.get("annotations") if "daemonsets" in path else None,
                        item.get("spec") if "daemonsets" in path else None,
                        item.get("data"),
                    ]
                )
        events = api.get("/api/v1/events", params={"labelSelector": "gpu-slots.io/change"})
        parts += sorted(e["metadata"]["name"] for e in events.json()["items"])
    return json.dumps(parts, sort_keys=True, default=str)


def timed(call: Callable[[], T]) -> tuple[T, float]:
    started = time.monotonic()
    answer = call()
    return answer, time.monotonic() - started


def healthz_s(stack: Stack) -> float:
    """How long /healthz takes now (it must never wait on a request being made)."""
    return _healthz_s(stack.client)


def _healthz_s(dashboard: httpx.Client) -> float:
    response, took = timed(lambda: dashboard.get("/healthz"))
    assert response.status_code == 200, response.text
    return took


# What a tenant's object shows on: these answer 200 once it is in.
OBJECT_PAGES = ("/api/v1/usage", "/api/v1/findings", "/usage", "/findings", "/")


def shown_fresh(dashboard: httpx.Client, *, after: datetime) -> None:
    """A snapshot built after `after` is served, not stale; the pages an object shows on
    answer 200 in time, and /healthz within SLOW_S."""

    def built_after() -> bool:
        summary = dashboard.get("/api/v1/summary").json()
        return datetime.fromisoformat(summary["generated_at"]) > after

    wait_for(built_after, timeout_s=20, what="a snapshot built after the object")
    assert dashboard.get("/api/v1/summary").json()["stale"] is False
    for path in OBJECT_PAGES:
        answer, took = timed(lambda p=path: dashboard.get(p))
        held_response(answer, took)
        assert answer.status_code == 200, (path, answer.text[:500])
    assert _healthz_s(dashboard) < SLOW_S


def held(status: int, body: str, took: float, *, what: str, write: bool) -> None:
    """No 5xx and no answer slower than SLOW_S (APPLIED_S for an applied write), with the
    request named when one fails."""
    said = f"{what} -> {status} in {took:.2f} s"
    assert status < 500, f"{said}\n{body[:2000]}"
    assert took < (APPLIED_S if write and status < 300 else SLOW_S), said


def held_response(response: httpx.Response, took: float) -> None:
    request = response.request
    write = request.method != "GET" and request.url.params.get("dryRun") != "true"
    what = f"{request.method} {request.url}"
    held(response.status_code, response.text, took, what=what, write=write)
