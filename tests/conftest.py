"""Shared fixtures: the simulated cluster and the real dashboard on top of it, over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from starlette.applications import Starlette

from app.settings import Settings
from app.simulator.world.cluster import SimulatedCluster
from app.web.runtime import Runtime
from app.web.server import build_app
from tests.live import LiveServer, stop_together, wait_for

# Property tests hold answers, not speed (speed is `make bench`'s): no per-example deadline and
# no health check on slow generation, which a loaded machine trips (286 ms against Hypothesis'
# default 200 ms with one core busy). A test's own @settings still apply.
settings.register_profile("gpu-slots", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gpu-slots")

AGENT_TOKEN = "test-agent-token"
ADMIN_TOKEN = "test-admin-token"


def runtime_of(app: object) -> Runtime:
    """A dashboard's Runtime, typed: Starlette's `app.state` is not, so the tests' type pass
    would check nothing read through `app.state.runtime`."""
    assert isinstance(app, Starlette)
    value: Runtime = app.state.runtime
    return value


@dataclass
class Stack:
    """A simulator, the dashboard reading it, and an HTTP client for the dashboard."""

    simulator: SimulatedCluster
    app: FastAPI
    dashboard_url: str
    client: httpx.Client

    def summary(self) -> dict[str, Any]:
        response = self.client.get("/api/v1/summary")
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    def wait(
        self, probe: Callable[[], object], *, timeout_s: float = 10.0, what: str = ""
    ) -> object:
        return wait_for(probe, timeout_s=timeout_s, what=what)


def stack_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {
        "agent_token": AGENT_TOKEN,
        # The shared token is an explicit opt-in; tests of node binding set their own.
        "agent_auth": "shared-token",
        "admin_token": ADMIN_TOKEN,
        "session_secret": "test-session-secret-0123456789abcdef",
        "snapshot_min_interval_s": 0.05,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def make_stack() -> Iterator[Callable[..., Stack]]:
    """Start simulator(scenario) + dashboard; everything is stopped after the test."""
    started: list[tuple[SimulatedCluster, LiveServer, httpx.Client]] = []

    def start(
        scenario: str = "host-split",
        *,
        agents: bool = True,
        report_interval_s: float = 0.5,
        probe_interval_s: float = 10.0,
        **settings: object,
    ) -> Stack:
        simulator = SimulatedCluster(scenario)
        simulator_url = simulator.start(host="127.0.0.1", port=0)
        app = build_app(
            stack_settings(**settings),
            kube_server=simulator_url,
            refresh_interval_s=0.5,
            probe_interval_s=probe_interval_s,
            retry_delay_s=0.1,
        )
        server = LiveServer(app)
        url = server.start()
        client = httpx.Client(base_url=url, timeout=10)
        started.append((simulator, server, client))
        if agents:
            simulator.configure_agents(
                report_to=url, token=AGENT_TOKEN, interval_s=report_interval_s
            )
        stack = Stack(simulator=simulator, app=app, dashboard_url=url, client=client)
        wait_for(lambda: client.get("/readyz").status_code == 200, what="dashboard ready")
        return stack

    yield start
    for _simulator, _server, client in started:
        client.close()
    stop_together(*(stop for sim, server, _ in started for stop in (server.stop, sim.stop)))


@pytest.fixture
def host_split(make_stack: Callable[..., Stack]) -> Stack:
    """The four-GPU server: GPUs 0-1 kept for host training, the plugin limited to GPUs 2-3."""
    stack = make_stack("host-split")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 4,  # type: ignore[index]
        what="agent report of gpu-server-1",
    )
    return stack


@pytest.fixture(scope="module")
def demo_stack() -> Iterator[Stack]:
    """The demo scenario with a fast refresh, shared by a module (browser tests)."""
    simulator = SimulatedCluster("demo")
    simulator_url = simulator.start(host="127.0.0.1", port=0)
    app = build_app(
        stack_settings(), kube_server=simulator_url, refresh_interval_s=0.5, retry_delay_s=0.1
    )
    server = LiveServer(app)
    url = server.start()
    simulator.configure_agents(report_to=url, token=AGENT_TOKEN, interval_s=0.5)
    client = httpx.Client(base_url=url, timeout=10)
    wait_for(lambda: client.get("/readyz").status_code == 200, what="dashboard ready")
    yield Stack(simulator=simulator, app=app, dashboard_url=url, client=client)
    client.close()
    stop_together(server.stop, simulator.stop)


# The tiers `make check` leaves out (docs/TESTING.md): folders that need built tools, a
# browser or a real Prometheus, and any test that runs the real kubectl or helm.
TIER_FOLDERS = frozenset(
    {
        "browser",
        "chart",
        "differential",
        "fuzz",
        "install",
        "k3s",
        "monitoring",
        "node",
        "real",
        "real_inputs",
    }
)
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tiers `tier` by where they live and what they use, never by hand."""
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        module = getattr(item, "module", None)
        runs_tools = module is not None and (
            "kube_tools" in vars(module) or "Kubectl" in vars(module)
        )
        uses_kubectl = "kubectl" in getattr(item, "fixturenames", ())
        if folder in TIER_FOLDERS or runs_tools or uses_kubectl:
            item.add_marker(pytest.mark.tier)
