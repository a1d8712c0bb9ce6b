"""The cache lists in pages (`limit` + `continue`) and watches from the list's version."""

from __future__ import annotations

import math
from typing import Any

from kubernetes import client

from app.domain.plugin_target import PluginTarget
from app.kube.cache import ClusterCache
from app.kube.client import make_api_client
from app.simulator.world.cluster import SimulatedCluster
from tests.live import wait_for


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _keys(pods: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}


def test_pods_listed_three_a_page_are_all_cached_and_then_watched() -> None:
    sim = SimulatedCluster("host-split")
    url = sim.start()
    core = client.CoreV1Api(make_api_client(host=url))
    for index in range(7):
        core.create_namespaced_pod("default", _pod(f"early-{index}"))
    expected = _keys(core.list_pod_for_all_namespaces(_preload_content=False).json()["items"])
    assert len(expected) == 9  # the scenario's 2 pods and 7 more: three pages of 3
    sim.faults.reset_counts()
    cache = ClusterCache(
        make_api_client(host=url),
        plugin=PluginTarget(),
        watch_timeout_s=30,
        retry_delay_s=0.05,
        probe_interval_s=5,
        page_size=3,
    )
    cache.start()
    try:
        wait_for(lambda: cache.health().synced, what="first list")
        assert _keys(cache.items("pods")) == expected
        assert sim.faults.counts()[("list", "Pod")] == math.ceil(9 / 3)

        core.create_namespaced_pod("default", _pod("late"))
        wait_for(
            lambda: ("default", "late") in _keys(cache.items("pods")),
            what="the pod created after the list",
        )
        assert cache.relists()["pods"] == 1

        # A re-list (the watch's version expired) keeps the very objects of unchanged pods.
        before = {
            (p["metadata"]["namespace"], p["metadata"]["name"]): p for p in cache.items("pods")
        }
        sim.expire_watches()
        wait_for(lambda: cache.relists()["pods"] == 2, what="the re-list after 410 Gone")
        after = cache.items("pods")
        assert _keys(after) == set(before)
        assert all(
            pod is before[(pod["metadata"]["namespace"], pod["metadata"]["name"])] for pod in after
        )
    finally:
        cache.stop()
        sim.stop()
