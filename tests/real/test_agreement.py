"""Both tiers agree: the demo scenario's figures on the real control plane equal the simulator's.

The same scenario (without its live workload) is loaded into the embedded simulator and,
through the actor, into the real API server, where the real scheduler binds its pods, the
real DaemonSet controller runs its plugin pods and the real DRA allocator allocates its
claims; the dashboard must then show the same figures, node by node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.simulator.world.cluster import SimulatedCluster
from app.simulator.world.scenario import read_scenario
from app.web.server import build_app
from tests.conftest import AGENT_TOKEN, stack_settings
from tests.live import LiveServer, wait_for
from tests.real.conftest import RealWorld
from tests.real.figures import dashboard_figures


def _settled(client: httpx.Client) -> dict[str, Any] | None:
    """The figures once every node's agent is fresh and two reads in a row agree."""
    nodes = client.get("/api/v1/nodes").json()["nodes"]
    if not nodes or not all((n.get("agent") or {}).get("fresh") for n in nodes):
        return None
    first = dashboard_figures(client)
    return first if dashboard_figures(client) == first else None


@pytest.fixture(scope="module")
def simulator_figures() -> Iterator[dict[str, Any]]:
    scenario = read_scenario("demo")
    scenario.steps = []
    simulator = SimulatedCluster(scenario)
    url = simulator.start()
    settings = stack_settings(plugin_config_namespaces=scenario.daemonset_namespaces())
    server = LiveServer(build_app(settings, kube_server=url, refresh_interval_s=0.5))
    dashboard = server.start()
    simulator.configure_agents(report_to=dashboard, token=AGENT_TOKEN, interval_s=0.5)
    try:
        with httpx.Client(base_url=dashboard, timeout=10) as client:
            yield wait_for(
                lambda: _settled(client),
                timeout_s=60,
                interval_s=0.5,
                what="the simulator tier's figures",
            )
    finally:
        server.stop()
        simulator.stop()


def _differences(real: Any, simulated: Any, path: str = "") -> list[str]:
    if isinstance(real, dict) and isinstance(simulated, dict):
        found = []
        for key in sorted(set(real) | set(simulated), key=str):
            found += _differences(real.get(key), simulated.get(key), f"{path}.{key}")
        return found
    if isinstance(real, list) and isinstance(simulated, list) and len(real) == len(simulated):
        return [
            d
            for n, (a, b) in enumerate(zip(real, simulated, strict=True))
            for d in _differences(a, b, f"{path}[{n}]")
        ]
    return [] if real == simulated else [f"{path}: real {real!r} != simulated {simulated!r}"]


def test_demo_figures_equal_on_the_real_control_plane_and_the_simulator(
    world: RealWorld, simulator_figures: dict[str, Any]
) -> None:
    with httpx.Client(base_url=world.dashboard.url, timeout=10) as client:
        real = wait_for(
            lambda: _settled(client), timeout_s=90, interval_s=0.5, what="the real tier's figures"
        )

    differences = _differences(real, simulator_figures)
    assert not differences, "\n".join(differences)
