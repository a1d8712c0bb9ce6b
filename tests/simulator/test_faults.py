"""Fault injection and request counting, through Python and the `/_sim/` endpoints."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from app.simulator.apiserver.resources import NAMESPACE
from app.simulator.world.cluster import SimulatedCluster


@pytest.fixture(autouse=True)
def _clean(sim: SimulatedCluster) -> Iterator[None]:
    sim.clear_faults()
    yield
    sim.clear_faults()


def test_unavailable_answers_503_to_everything(
    sim: SimulatedCluster, core: client.CoreV1Api
) -> None:
    sim.set_unavailable(True)
    with pytest.raises(ApiException) as caught:
        core.list_node()
    assert caught.value.status == 503 and "ServiceUnavailable" in caught.value.body
    assert httpx.get(f"{sim.url}/version").status_code == 503
    sim.set_unavailable(False)
    assert core.list_node().items


def test_fail_next_matches_verb_and_kind_then_recovers(
    sim: SimulatedCluster, core: client.CoreV1Api
) -> None:
    sim.fail_next(verb="list", kind="pods", code=500, count=2)
    assert core.list_node().items  # another kind is untouched
    for _ in range(2):
        with pytest.raises(ApiException) as caught:
            core.list_pod_for_all_namespaces()
        assert caught.value.status == 500 and "InternalError" in caught.value.body
    assert core.list_pod_for_all_namespaces().items


def test_fail_next_conflict_on_patch(sim: SimulatedCluster, apps: client.AppsV1Api) -> None:
    sim.fail_next(verb="patch", kind="DaemonSet", code=409)
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_daemon_set(
            "nvidia-device-plugin-daemonset", "kube-system", {"metadata": {"labels": {"x": "y"}}}
        )
    assert caught.value.status == 409


def test_request_counter_counts_verb_and_kind(
    sim: SimulatedCluster, core: client.CoreV1Api
) -> None:
    sim.reset_request_counts()
    core.list_node()
    core.list_node()
    core.read_node("gpu-server-1")
    assert sim.request_count("list", "Node") == 2
    assert sim.request_count("get", "nodes") == 1
    assert sim.request_counts()[("list", "Node")] == 2
    body = httpx.get(f"{sim.url}/_sim/requests").json()
    assert {"verb": "list", "kind": "Node", "count": 2} in body["counts"]
    httpx.delete(f"{sim.url}/_sim/requests")
    assert sim.request_count() == 0


def test_http_faults_endpoint_injects_and_clears(
    sim: SimulatedCluster, core: client.CoreV1Api
) -> None:
    base = f"{sim.url}/_sim/faults"
    answer = httpx.post(base, json={"verb": "get", "kind": "Node", "code": 500, "count": 1})
    assert answer.json()["pending"] == [
        {"verb": "get", "kind": "Node", "code": 500, "remaining": 1}
    ]
    with pytest.raises(ApiException):
        core.read_node("gpu-server-1")
    httpx.post(base, json={"unavailable": True})
    with pytest.raises(ApiException) as caught:
        core.list_node()
    assert caught.value.status == 503
    httpx.delete(base)
    assert core.read_node("gpu-server-1").metadata.name == "gpu-server-1"
    assert httpx.post(base, json={"code": "x"}).status_code == 400


def test_stopped_server_refuses_connections_and_restarts_with_state() -> None:
    sim = SimulatedCluster("host-split")
    url = sim.start()
    port = int(url.rsplit(":", 1)[1])
    sim.registry.create(
        NAMESPACE,
        None,
        {"metadata": {"name": "kept"}},
    )
    sim.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/version")
    url2 = sim.start(port=port)
    try:
        assert httpx.get(f"{url2}/api/v1/namespaces/kept").status_code == 200
    finally:
        sim.stop()
