"""Two dashboard replicas against one simulated cluster: same answers, shared sessions.

The replicas listen on the same port of two loopback addresses (127.0.0.1 and 127.0.0.2),
as two pods behind the chart's headless Service would; the real agent resolves the
dashboard's name to both (the resolver is the only thing given here) and posts to each.
A third replica started later gets the reports from its peers before it says it is ready.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.agent.main import add_arguments
from app.agent.service import run_agent
from app.simulator.world.cluster import SimulatedCluster
from app.web.server import build_app
from tests.agent.fake_nvml import MIB, FakeGpu, FakeNvml
from tests.conftest import ADMIN_TOKEN, AGENT_TOKEN, stack_settings
from tests.live import LiveServer, wait_for

NODE = "gpu-server-1"
NAME = "gpu-slots-peers.test"
SLOT_FIGURES = ("physical_gpus", "visible_gpus", "host_gpus", "allocatable", "requested", "free")


@dataclass
class Replicas:
    simulator: SimulatedCluster
    port: int
    servers: list[LiveServer]
    clients: list[httpx.Client]

    def start(self, address: str, **settings: object) -> httpx.Client:
        app = build_app(
            stack_settings(pod_ip=address, **settings),
            kube_server=self.simulator.url,
            refresh_interval_s=0.5,
            retry_delay_s=0.1,
        )
        server = LiveServer(app, host=address, port=self.port)
        url = server.start()
        self.servers.append(server)
        self.port = int(url.rsplit(":", 1)[1])
        client = httpx.Client(base_url=url, timeout=10)
        self.clients.append(client)
        return client

    def peers(self, *addresses: str) -> str:
        return ",".join(f"http://{address}:{self.port}" for address in addresses)


@pytest.fixture
def replicas() -> Iterator[Replicas]:
    simulator = SimulatedCluster("host-split")
    simulator.start(host="127.0.0.1", port=0)
    started = Replicas(simulator=simulator, port=0, servers=[], clients=[])
    yield started
    for client in started.clients:
        client.close()
    for server in reversed(started.servers):
        server.stop()
    simulator.stop()


def agent_once(tmp_path: Path, replicas: Replicas, simulator: SimulatedCluster) -> tuple[int, str]:
    """The real agent, once, for gpu-server-1: a host process of 30 GB."""
    (tmp_path / "proc").mkdir(exist_ok=True)
    token = tmp_path / "token"
    token.write_text(AGENT_TOKEN + "\n")
    uuids = [gpu.uuid for gpu in simulator.inventories[NODE].gpus]
    gpus = [FakeGpu(uuid=uuid, memory_used_bytes=0) for uuid in uuids]
    gpus[0] = FakeGpu(
        uuid=uuids[0], memory_used_bytes=30_000 * MIB, processes=[(4242, 30_000 * MIB)]
    )
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [
            *("--dashboard", f"http://{NAME}:{replicas.port}", "--token-file", str(token)),
            *("--node", NODE, "--once", "--proc-root", str(tmp_path / "proc")),
        ]
    )
    log = io.StringIO()

    def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1", "127.0.0.2"] if host == NAME else []

    status = run_agent(args, stream=log, nvml=FakeNvml(gpus), resolve=resolve)
    return status, log.getvalue()


def answers(client: httpx.Client) -> dict[str, Any]:
    """What a user compares: totals, finding counts, the node's GPUs and their memory."""
    summary = client.get("/api/v1/summary").json()
    node = client.get(f"/api/v1/nodes/{NODE}").json()["node"]
    return {
        "totals": summary["totals"],
        "findings": summary["findings"],
        "gpus": [
            (gpu["uuid"], gpu["role"], gpu["memory_host_mib"], gpu["finding_codes"])
            for gpu in node["gpus"]
        ],
    }


def reported(client: httpx.Client) -> bool:
    """Whether the replica shows the agent's report (4 physical GPUs, 30 GB of host memory)."""
    found = answers(client)
    host_mib = sorted(gpu[2] for gpu in found["gpus"])
    return bool(found["totals"]["physical_gpus"] == 4 and host_mib == [0, 0, 0, 30_000])


def test_two_replicas_get_every_report_and_answer_alike(replicas: Replicas, tmp_path: Path) -> None:
    secure = {"public_reads": False}
    first = replicas.start("127.0.0.1", **secure)
    second = replicas.start("127.0.0.2", **secure)
    for client in (first, second):
        wait_for(lambda c=client: c.get("/readyz").status_code == 200, what="replica ready")

    status, log = agent_once(tmp_path, replicas, replicas.simulator)

    assert status == 0, log
    assert "accepted by 2 replicas" in log
    login = first.post("/login", data={"token": ADMIN_TOKEN}, follow_redirects=False)
    assert login.status_code == 303
    # The browser's session cookie (one site name for both pods), answered by the other pod.
    cookie = "; ".join(f"{name}={value}" for name, value in login.cookies.items())
    second.headers["Cookie"] = cookie
    wait_for(lambda: reported(first) and reported(second), what="the report on both")
    assert answers(first) == answers(second)
    totals = answers(second)["totals"]
    assert {key: totals[key] for key in SLOT_FIGURES} == {
        "physical_gpus": 4,
        "visible_gpus": 2,
        "host_gpus": 2,
        "allocatable": 2,
        "requested": 1,
        "free": 1,
    }


def test_a_new_replica_copies_its_peers_reports_before_it_is_ready(
    replicas: Replicas, tmp_path: Path
) -> None:
    first = replicas.start("127.0.0.1")
    second = replicas.start("127.0.0.2")
    assert agent_once(tmp_path, replicas, replicas.simulator)[0] == 0
    wait_for(lambda: reported(first) and reported(second), what="the report on both")

    # A third replica: one report interval is 10 minutes, so only the peers can make it ready.
    third = replicas.start(
        "127.0.0.3",
        peers=replicas.peers("127.0.0.1", "127.0.0.2", "127.0.0.3"),
        report_wait_s=600,
    )
    ready = wait_for(
        lambda: third.get("/readyz").json().get("status") == "ok" and third.get("/readyz").json()
    )

    assert ready["reports"] == "reports from peers: 2 of 2 answered, 1 reports"
    wait_for(lambda: answers(third) == answers(first), what="the same answers on the third")


def test_a_replica_no_peer_answers_waits_one_report_interval_and_says_so(
    replicas: Replicas,
) -> None:
    lonely = replicas.start("127.0.0.1", peers="http://127.0.0.9:9", report_wait_s=600)

    waiting = wait_for(
        lambda: (
            lonely.get("/readyz").json().get("reason", "").startswith("no peer")
            and lonely.get("/readyz")
        ),
        what="the wait to begin",
    )

    assert waiting.status_code == 503
    assert waiting.json()["reports"] == (
        "no peer answered (1 asked); waiting one report interval (600 s)"
    )
    assert lonely.get("/api/v1/peer/reports").status_code == 401
    secret = {"Authorization": "Bearer " + "0" * 64}
    assert lonely.get("/api/v1/peer/reports", headers=secret).status_code == 401


def test_a_single_replica_waits_for_its_agents_then_is_ready(replicas: Replicas) -> None:
    single = replicas.start("127.0.0.1", report_wait_s=0.5)

    ready = wait_for(lambda: r if (r := single.get("/readyz")).status_code == 200 else None)

    assert ready.json()["reports"] == (
        "no peers configured; waited one report interval (0.5 s) for the agents"
    )
