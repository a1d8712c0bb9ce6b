"""Free GPUs the way people ask: whole GPUs by model beside free shares, on the demo.

The demo's 18 free slots are not 18 GPUs: 15 are quarter-GPU time-slices on one node and
one is a GPU whose host process holds 77 of 79.6 GiB. The summary and the overview give
whole GPUs by model, shares apart and the host-held GPU apart; the free filter keeps the
nodes the headline counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.simulator.world.cluster import SimulatedCluster
from app.simulator.world.scenario import read_scenario
from app.web.server import build_app
from tests.conftest import AGENT_TOKEN, Stack, stack_settings
from tests.live import LiveServer, wait_for


@pytest.fixture(scope="module")
def demo() -> Iterator[Stack]:
    scenario = read_scenario("demo")
    scenario.steps = []  # hold still: the figures are compared literally
    simulator = SimulatedCluster(scenario)
    url = simulator.start(host="127.0.0.1", port=0)
    settings = stack_settings(plugin_config_namespaces=simulator.scenario.daemonset_namespaces())
    app = build_app(settings, kube_server=url, refresh_interval_s=0.5)
    server = LiveServer(app)
    dashboard = server.start()
    simulator.configure_agents(report_to=dashboard, token=AGENT_TOKEN, interval_s=0.5)
    client = httpx.Client(base_url=dashboard, timeout=10)
    stack = Stack(simulator=simulator, app=app, dashboard_url=dashboard, client=client)
    wait_for(
        lambda: all(
            (n.get("agent") or {}).get("fresh")
            for n in client.get("/api/v1/nodes").json().get("nodes") or [{}]
        ),
        timeout_s=30,
        what="every agent fresh",
    )
    yield stack
    client.close()
    server.stop()
    simulator.stop()


def _by_model(stack: Stack) -> dict[str, dict[str, Any]]:
    return {m["model"]: m for m in stack.summary()["free_gpus"]}


def test_summary_gives_free_whole_gpus_by_model_shares_and_host_held_apart(demo: Stack) -> None:
    models = _by_model(demo)
    l40s = models["NVIDIA L40S"]
    assert (l40s["whole"], l40s["shares"], l40s["nodes"]) == (0, 15, ["gpu-ts-7"])
    h100 = models["NVIDIA H100 80GB HBM3"]
    # gpu-dra-9's GPU 3: published by the DRA driver, no claim holds it (GPU 1's free MIG
    # placement is a share); gpu-server-3's host-held GPU is not counted
    assert (h100["whole"], h100["shares"], h100["nodes"]) == (1, 1, ["gpu-dra-9"])
    assert h100["host_held"] == [
        {"node": "gpu-server-3", "index": 3, "memory_host_mib": 78848, "memory_total_mib": 81559}
    ]
    a100 = models["NVIDIA A100-SXM4-80GB"]
    assert a100["whole"] >= 2
    assert {"gpu-mig-8", "gpu-server-1"} <= set(a100["nodes"])
    assert a100["shares"] == 8  # MIG slices of gpu-mig-8: shares of a GPU, not GPUs
    whole = sum(m["whole"] for m in models.values()) - h100["whole"]  # DRA: not a slot
    resource = demo.summary()["resources"]["nvidia.com/gpu"]  # type: ignore[index]
    host_held = sum(len(m["host_held"]) for m in models.values())
    assert whole + l40s["shares"] + host_held == resource["free"]


def test_overview_headline_and_free_filter_agree(demo: Stack) -> None:
    page = demo.client.get("/").text
    assert 'data-testid="free-gpus-total"' in page
    assert "whole GPUs free:" in page
    assert "Not counted: NVIDIA H100 80GB HBM3 GPU 3 on gpu-server-3" in page
    assert "77.0 of 79.6 GiB" in page
    free_nodes = {n for m in _by_model(demo).values() for n in m["nodes"]}
    listed = demo.client.get("/?free=1").text
    for node in demo.client.get("/api/v1/nodes").json()["nodes"]:
        shown = f'data-testid="node-{node["name"]}"' in listed
        assert shown == (node["name"] in free_nodes), node["name"]


def test_korean_overview_words_free_gpus(demo: Stack) -> None:
    page = demo.client.get("/?lang=ko").text
    assert "모델별 빈 GPU" in page


def test_usage_lists_dra_holders_shares_and_resources_apart(demo: Stack) -> None:
    usage = demo.client.get("/api/v1/usage", params={"by": "node"}).json()
    dra = next(r for r in usage["rows"] if r["key"] == "gpu-dra-9")
    assert (dra["pods"], dra["dra_devices"], dra["slots_held"]) == (4, 3, 0)
    holders = {p["pod"]: p for p in usage["pods"] if p["node"] == "gpu-dra-9"}
    assert set(holders) == {
        "ml/lab-notebook-a",
        "ml/lab-notebook-b",
        "ml/mig-eval-0",
        "ml/embed-dra-0",
    }
    assert holders["ml/lab-notebook-a"]["gpu_share"] == 0.5  # one GPU time-sliced by two
    assert holders["ml/embed-dra-0"]["gpu_share"] == 1.0
    mig = next(r for r in usage["rows"] if r["key"] == "gpu-mig-8")
    assert mig["slots_held"] == 0  # a MIG slice is never added into nvidia.com/gpu
    assert mig["slots_by_resource"] == {"nvidia.com/mig-1g.10gb": 1}
    owners = {r["key"] for r in demo.client.get("/api/v1/usage?by=owner").json()["rows"]}
    assert not any("/Pod/" in owner for owner in owners)
    assert "ml/eval-direct-0" not in {p["pod"] for p in usage["pods"]}  # it holds no slot
    page = demo.client.get("/usage?by=node").text
    assert 'data-key="gpu-dra-9"' in page
    assert "+ 3 DRA devices" in page
