"""Issue 16's "done when", on the demo scenario through the real stack (simulator over HTTP).

The crash-looping node is failing, not kept for the host; errors in Korean; usage per
namespace; the idle notebook flagged with its idle time; an admin switch ends on "done".
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from app.kube.client import make_api_client
from app.simulator.plugin.rollout import RolloutPace
from app.simulator.world.cluster import SimulatedCluster
from app.web.server import build_app
from tests.conftest import ADMIN_TOKEN, AGENT_TOKEN, Stack, stack_settings
from tests.live import LiveServer, wait_for

HANGUL = re.compile(r"[\uac00-\ud7a3]")
PACE_S = 0.3


@dataclass
class ServedStack(Stack):
    """A stack whose dashboard this module serves itself (stopped by `_stop`)."""

    server: LiveServer


def _start(
    *, pace: RolloutPace | None = None, scenario: str | Path = "demo", **settings: object
) -> ServedStack:
    simulator = SimulatedCluster(scenario, rollout_pace=pace)
    app = build_app(
        stack_settings(**settings),
        kube_server=simulator.start(host="127.0.0.1", port=0),
        refresh_interval_s=0.5,
        retry_delay_s=0.1,
    )
    server = LiveServer(app)
    url = server.start()
    simulator.configure_agents(report_to=url, token=AGENT_TOKEN, interval_s=0.3)
    client = httpx.Client(base_url=url, timeout=10)
    stack = ServedStack(
        simulator=simulator, app=app, dashboard_url=url, client=client, server=server
    )
    wait_for(lambda: _all_reported(client), timeout_s=20, what="agent reports")
    return stack


def _stop(stack: ServedStack) -> None:
    stack.client.close()
    stack.server.stop()
    stack.simulator.stop()


def _all_reported(client: httpx.Client) -> bool:
    response = client.get("/api/v1/nodes")
    if response.status_code != 200:
        return False
    nodes = [n for n in response.json()["nodes"] if n["gpu_node"]]
    return len(nodes) == 9 and all(n["agent"] is not None for n in nodes)


@pytest.fixture(scope="module")
def demo() -> Iterator[Stack]:
    stack = _start(idle_slot_after_s=1.0, low_utilization_after_s=3600.0)
    yield stack
    _stop(stack)


def node(stack: Stack, name: str) -> dict[str, Any]:
    body: dict[str, Any] = stack.client.get(f"/api/v1/nodes/{name}").json()["node"]
    return body


def test_crash_looping_plugin_node_is_failing_not_kept_for_host(demo: Stack) -> None:
    ws5 = node(demo, "gpu-ws-5")
    assert (ws5["physical_gpus"], ws5["host_gpus"], ws5["failing_gpus"]) == (2, 0, 2)
    assert [g["role"] for g in ws5["gpus"]] == ["failing", "failing"]
    assert ws5["plugin_pod"]["state"] == "CrashLoopBackOff"
    totals = demo.summary()["totals"]
    assert (totals["host_gpus"], totals["failing_gpus"]) == (10, 2)  # type: ignore[index]
    html = demo.client.get("/").text
    assert 'data-testid="plugin-state-gpu-ws-5" data-state="CrashLoopBackOff"' in html
    assert 'data-testid="failing-gpus-gpu-ws-5"' in html
    assert 'data-testid="host-gpus-gpu-ws-5"' not in html
    card = html.split('data-testid="node-gpu-ws-5"', 1)[1].split("</article>", 1)[0]
    assert card.count('data-severity="error" role="img"') == 2  # both GPUs drawn failing


def test_findings_severity_error_in_korean_only_errors_with_korean_titles(demo: Stack) -> None:
    html = demo.client.get("/findings", params={"severity": "error", "lang": "ko"}).text
    items = re.findall(r'<li class="finding sev-(\w+)" data-testid="finding-([\w-]+)"', html)
    assert items and {severity for severity, _ in items} == {"error"}
    titles = re.findall(r'data-testid="finding-title">([^<]+)<', html)
    assert len(titles) == len(items)
    assert all(HANGUL.search(title) for title in titles), titles
    assert (
        "NVIDIA_VISIBLE_DEVICES가 gpu-ws-5에 없는 장치 2개(2,3)를 나열합니다: "
        "플러그인이 시작할 수 없습니다" in titles
    )


def test_usage_by_namespace_counts_slots_idle_and_memory(demo: Stack) -> None:
    def idle_counted() -> bool:
        body = demo.client.get("/api/v1/usage", params={"by": "namespace"}).json()
        return any(r["key"] == "research" and r["idle_slots"] == 1 for r in body["rows"])

    wait_for(idle_counted, timeout_s=15, what="idle slot counted")
    body = demo.client.get("/api/v1/usage", params={"by": "namespace"}).json()
    research = next(r for r in body["rows"] if r["key"] == "research")
    assert research == {
        "key": "research",
        "slots_held": 1,
        "pods": 1,
        "gpus": 1,
        "memory_used_mib": 0,
        "idle_slots": 1,
        "pending_pods": 0,
        "pending_slots": 0,
        "gpu_share": 1.0,  # one whole GPU's slot
        "slots_by_resource": {"nvidia.com/gpu": 1},
        "dra_devices": 0,
    }
    assert body["by"] == "namespace"
    ml = next(r for r in body["rows"] if r["key"] == "ml")
    assert ml["slots_held"] >= 3  # notebook-0, infer-0, train-1 (+ the looping batch job)
    owners = demo.client.get("/api/v1/usage", params={"by": "owner"}).json()["rows"]
    assert "research/erin" in {row["key"] for row in owners}
    assert demo.client.get("/api/v1/usage", params={"by": "team"}).status_code == 422


def test_idle_notebook_flagged_with_how_long(demo: Stack) -> None:
    def idle() -> dict[str, Any] | None:
        for item in demo.client.get("/api/v1/findings").json()["findings"]:
            if item["code"] == "slot-held-idle" and item["pod"] == "research/notebook-idle-0":
                return dict(item)
        return None

    found = wait_for(idle, timeout_s=15, what="slot-held-idle")
    assert isinstance(found, dict)
    assert found["node"] == "gpu-server-4"
    assert re.fullmatch(
        r"research/notebook-idle-0 holds 1 slot of GPU \d: held for \d+ s, no GPU process",
        found["title"],
    )
    assert found["evidence"]["idle_for_s"] >= 1
    page = demo.client.get("/usage").text
    assert 'data-testid="idle-for"' in page


@pytest.fixture
def paced() -> Iterator[Stack]:
    stack = _start(pace=RolloutPace(terminating_s=PACE_S, creating_s=PACE_S))
    yield stack
    _stop(stack)


def _switch_to_ts4(stack: Stack) -> dict[str, Any]:
    ds = stack.simulator.get("DaemonSet", "nvidia-device-plugin-daemonset", "kube-system")
    assert ds is not None
    generation = ds["metadata"]["generation"]
    before: dict[str, Any] = wait_for(
        lambda: (
            (body := stack.client.get("/api/v1/plugin/rollout").json())["done"]
            and body["generation"] == generation
            and body
        ),
        what="no rollout in progress, as the dashboard's cache sees the DaemonSet now",
    )
    response = stack.client.put(  # blind, without passFailingNodes: the rollout may hold
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params={"force": "true"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert response.status_code == 200, response.text
    return before


def test_admin_switch_in_demo_is_held_by_the_crash_looping_node(paced: Stack) -> None:
    """As the real DaemonSet controller does (tests/real): gpu-ws-5's unready pod spends
    maxUnavailable 1, so no ready pod elsewhere is replaced, and the view says why."""
    _switch_to_ts4(paced)

    held = wait_for(
        lambda: (body := paced.client.get("/api/v1/plugin/rollout").json())["blocked_by"] and body,
        timeout_s=2 * 2 * PACE_S + 10,
        what="the rollout held by gpu-ws-5",
    )

    assert isinstance(held, dict)
    assert (held["state"], held["blocked_by"], held["updated"]) == ("stuck", ["gpu-ws-5"], 1)
    assert "maxUnavailable (1)" in held["pending"][0] and "gpu-ws-5" in held["pending"][0]
    states = {n["node"]: (n["state"], n["advertised"]) for n in held["nodes"]}
    assert states["gpu-server-2"] == ("waiting", 2)


def test_admin_switch_in_demo_ends_on_done_with_room_for_the_failing_node(paced: Stack) -> None:
    api = make_api_client(host=paced.simulator.url)
    client.AppsV1Api(api).patch_namespaced_daemon_set(
        "nvidia-device-plugin-daemonset",
        "kube-system",
        {"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 2}}}},
    )
    api.close()
    before = _switch_to_ts4(paced)
    started = time.monotonic()
    # Six plugin pods replaced one after the other, each Terminating then ContainerCreating.
    rollout_time_s = 6 * 2 * PACE_S
    done = wait_for(
        lambda: (body := paced.client.get("/api/v1/plugin/rollout").json())["done"] and body,
        timeout_s=rollout_time_s + 10,
        what="rollout done",
    )
    assert isinstance(done, dict)
    assert time.monotonic() - started < rollout_time_s + 10
    assert done["state"] == "done" and done["generation"] == before["generation"] + 1
    states = {n["node"]: (n["state"], n["advertised"]) for n in done["nodes"]}
    assert states == {
        "gpu-server-1": ("done", 8),
        "gpu-server-2": ("done", 8),
        "gpu-server-3": ("done", 8),
        "gpu-server-4": ("done", 8),
        "gpu-server-6": ("done", 8),  # cordoned: it still advertises, its slots are stranded
        "gpu-ws-5": ("failing", None),
    }  # gpu-ts-7 and gpu-mig-8 run another plugin install, gpu-dra-9 DRA: not reached
    assert (done["mode"], done["replicas"], done["pending"]) == ("time-slicing", 4, [])
