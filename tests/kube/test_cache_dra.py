"""The cache reads resource.k8s.io/v1 from the simulator; a server without it is no error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from app.domain.plugin_target import PluginTarget
from app.kube.cache import ClusterCache
from app.kube.client import make_api_client
from app.simulator.world.cluster import SimulatedCluster
from tests.live import wait_for

DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")


def _cache(url: str) -> ClusterCache:
    return ClusterCache(
        make_api_client(host=url),
        plugin=PluginTarget(),
        watch_timeout_s=30,
        retry_delay_s=0.05,
        probe_interval_s=0.1,
    )


@pytest.fixture
def dra_sim() -> Iterator[SimulatedCluster]:
    sim = SimulatedCluster("dra")
    sim.start()
    yield sim
    sim.stop()


def _names(cache: ClusterCache, collection: str) -> set[str]:
    return {item["metadata"]["name"] for item in cache.items(collection)}


def test_cache_lists_and_watches_the_dra_kinds(dra_sim: SimulatedCluster) -> None:
    assert dra_sim.url
    cache = _cache(dra_sim.url)
    cache.start()
    try:
        wait_for(lambda: cache.health().synced, what="first list")
        assert _names(cache, "deviceclasses") == {"gpu.nvidia.com", "mig.nvidia.com"}
        assert _names(cache, "resourceslices") == {
            "dra-a100-1-gpu.nvidia.com",
            "dra-mig-2-gpu.nvidia.com",
        }
        assert _names(cache, "resourceclaimtemplates") == {"one-gpu"}
        assert {"shared-ts", "shared-mps", "mig-slice", "eight-gpus"} <= _names(
            cache, "resourceclaims"
        )
        api = client.ResourceV1Api(make_api_client(host=dra_sim.url))
        api.delete_namespaced_resource_claim("eight-gpus", "ml")
        wait_for(lambda: "eight-gpus" not in _names(cache, "resourceclaims"), what="delete seen")
        assert cache.absent() == set()
    finally:
        cache.stop()


def test_cache_on_a_server_without_dra_holds_nothing_and_is_healthy() -> None:
    sim = SimulatedCluster("host-split")
    for kind in DRA_KINDS:
        sim.fail_next(verb="list", kind=kind, code=404, count=1000)
    sim.start()
    assert sim.url
    cache = _cache(sim.url)
    cache.start()
    try:
        wait_for(lambda: cache.health().synced, what="first list")
        health = cache.health()
        assert (health.failing_since, health.last_error) == (None, None)
        assert cache.absent() == {
            "deviceclasses",
            "resourceslices",
            "resourceclaims",
            "resourceclaimtemplates",
        }
        assert cache.items("resourceslices") == []
        assert "gpu-server-1" in _names(cache, "nodes")
    finally:
        cache.stop()
        sim.stop()
