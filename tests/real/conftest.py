"""One real control plane for the whole tier, with the demo scenario's nodes acted on it.

Order of set-up: build (cached) -> etcd + kube-apiserver + scheduler + controller manager
-> the actor registers the demo's nodes and loads its objects (the DaemonSet controller
creates the plugin pods, the scheduler binds the DRA pods and allocates their claims)
-> real helm installs the chart -> the dashboard runs with the chart's ServiceAccount
-> the actor's agents report with tokens bound to the chart's agent pods.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.simulator.actor.actor import NodeActor
from app.simulator.actor.rest import Rest
from app.simulator.world.scenario import read_scenario
from tests.live import wait_for
from tests.real.build import control_plane_binaries
from tests.real.controlplane import ControlPlane, running_control_plane
from tests.real.world import (
    ADMIN_TOKEN,
    AUDIENCE,
    NAMESPACE,
    Dashboard,
    install_chart,
    service_account_token,
    start_dashboard,
)

DASHBOARD_ACCOUNT = "gpu-slots-dashboard"


@dataclass
class RealWorld:
    plane: ControlPlane
    actor: NodeActor
    dashboard: Dashboard
    token: str  # the dashboard's ServiceAccount token

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.dashboard.url}{path}", timeout=10)

    def restart_dashboard(self, folder: Path) -> None:
        """A new dashboard process (nothing kept in memory), the agents pointed at it."""
        self.dashboard.stop()
        self.dashboard = start_dashboard(self.plane, folder, token=self.token)
        self.actor.configure_agents(
            report_to=self.dashboard.url,
            token=self.actor.agent_tokens(NAMESPACE, audience=AUDIENCE),
        )
        wait_for(
            lambda: _agents_fresh(self),
            timeout_s=60,
            interval_s=0.5,
            what="a fresh agent report from every node after the restart",
        )

    def admin(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        return httpx.request(
            method, f"{self.dashboard.url}{path}", headers=headers, timeout=60, **kwargs
        )


@pytest.fixture(scope="session")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    binaries = control_plane_binaries()
    with running_control_plane(binaries, tmp_path_factory.mktemp("control-plane")) as started:
        yield started


def _settled(plane: ControlPlane) -> bool:
    """Every DaemonSet's pods running, every scenario pod started."""
    with plane.http() as http:
        pods = http.get("/api/v1/pods").json()["items"]
    return bool(pods) and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def _agents_fresh(world: RealWorld) -> bool:
    nodes = world.get("/api/v1/nodes").json().get("nodes") or []
    return len(nodes) == len(world.actor.inventories) and all(
        (n.get("agent") or {}).get("fresh") for n in nodes
    )


@pytest.fixture(scope="session")
def world(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWorld]:
    scenario = read_scenario("demo")
    scenario.steps = []  # no live workload: both tiers must hold still to be compared
    rest = Rest(plane.server, token=plane.admin.token, ca_file=str(plane.ca_file))
    actor = NodeActor(rest, scenario)
    actor.register()
    actor.load_objects()
    actor.start()
    try:
        install_chart(plane, config_namespaces=scenario.daemonset_namespaces())
        wait_for(
            lambda: _settled(plane),
            timeout_s=90,
            interval_s=0.5,
            what="every pod of the demo running on the real control plane",
        )
        token = service_account_token(plane, NAMESPACE, DASHBOARD_ACCOUNT)
        dashboard = start_dashboard(plane, tmp_path_factory.mktemp("dashboard"), token=token)
    except BaseException:
        actor.stop()
        raise
    actor.configure_agents(
        report_to=dashboard.url, token=actor.agent_tokens(NAMESPACE, audience=AUDIENCE)
    )
    world = RealWorld(plane, actor, dashboard, token)
    try:
        wait_for(
            lambda: _agents_fresh(world),
            timeout_s=60,
            interval_s=0.5,
            what="a fresh agent report from every node",
        )
        yield world
    finally:
        actor.stop()
        world.dashboard.stop()
        rest.close()
