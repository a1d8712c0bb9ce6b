"""The list+watch cache against the simulator: follows changes, re-lists, survives outages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from app.domain.plugin_target import PluginTarget
from app.kube.cache import ClusterCache
from app.kube.client import make_api_client
from app.simulator.world.cluster import SimulatedCluster
from tests.live import wait_for


@pytest.fixture
def simulator() -> Iterator[SimulatedCluster]:
    sim = SimulatedCluster("host-split")
    sim.start()
    yield sim
    sim.stop()


@pytest.fixture
def cache(simulator: SimulatedCluster) -> Iterator[ClusterCache]:
    assert simulator.url
    cache = ClusterCache(
        make_api_client(host=simulator.url),
        plugin=PluginTarget(),
        watch_timeout_s=30,
        retry_delay_s=0.05,
        probe_interval_s=0.1,
    )
    cache.start()
    wait_for(lambda: cache.health().synced, what="first list")
    yield cache
    cache.stop()


def configmap(name: str, replicas: int) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, namespace="kube-system"),
        data={
            "config.yaml": f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            f"    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
        },
    )


def cached_names(cache: ClusterCache, collection: str) -> set[str]:
    return {item["metadata"]["name"] for item in cache.items(collection)}


def test_cache_lists_nodes_pods_and_the_named_daemonset(cache: ClusterCache) -> None:
    assert "gpu-server-1" in cached_names(cache, "nodes")
    assert cached_names(cache, "daemonsets") == {"nvidia-device-plugin-daemonset"}
    assert any(pod["spec"].get("nodeName") == "gpu-server-1" for pod in cache.items("pods"))


def test_cache_gives_one_namespace_s_pods_as_they_come_and_go(
    cache: ClusterCache, simulator: SimulatedCluster
) -> None:
    """The rollout reads the plugin's namespace only (not every pod of a 10,000-node cluster),
    and the whole list keeps its insertion order (the engine finds changed pods by it)."""
    core = client.CoreV1Api(make_api_client(host=simulator.url))
    every = cache.items("pods")
    namespaces = [pod["metadata"]["namespace"] for pod in every]
    first = namespaces[0]
    for namespace in set(namespaces):
        assert cache.items("pods", namespace) == [
            pod for pod in every if pod["metadata"]["namespace"] == namespace
        ]
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="lonely", namespace=first),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )
    core.create_namespaced_pod(first, pod)
    wait_for(lambda: "lonely" in [p["metadata"]["name"] for p in cache.items("pods", first)])
    after = cache.items("pods")
    assert after[:-1] == every, "a new pod is appended, every other pod in its place"
    assert after[-1]["metadata"]["name"] == "lonely"
    core.delete_namespaced_pod("lonely", first)
    wait_for(
        lambda: "lonely" not in [p["metadata"]["name"] for p in cache.items("pods", first)],
        what="delete seen",
    )
    assert cache.items("pods") == every
    assert cache.items("pods", "nowhere") == []


def test_cache_watches_the_plugin_namespace_configmaps_only(
    cache: ClusterCache, simulator: SimulatedCluster
) -> None:
    core = client.CoreV1Api(make_api_client(host=simulator.url))
    elsewhere = configmap("elsewhere", 2)
    elsewhere.metadata.namespace = "default"
    core.create_namespaced_config_map("default", elsewhere)
    core.create_namespaced_config_map("kube-system", configmap("helm-configs", 2))
    core.create_namespaced_config_map("kube-system", configmap("nvidia-device-plugin-config", 4))
    wait_for(lambda: "nvidia-device-plugin-config" in cached_names(cache, "configmaps"))
    assert cached_names(cache, "configmaps") == {"helm-configs", "nvidia-device-plugin-config"}
    core.delete_namespaced_config_map("nvidia-device-plugin-config", "kube-system")
    wait_for(lambda: cached_names(cache, "configmaps") == {"helm-configs"}, what="delete seen")


def test_cache_after_410_gone_relists_and_misses_no_change(
    cache: ClusterCache, simulator: SimulatedCluster
) -> None:
    before = cache.relists()["configmaps"]
    simulator.expire_watches()
    simulator.drop_watches()
    core = client.CoreV1Api(make_api_client(host=simulator.url))
    core.create_namespaced_config_map("kube-system", configmap("nvidia-device-plugin-config", 4))
    wait_for(lambda: "nvidia-device-plugin-config" in cached_names(cache, "configmaps"))
    wait_for(lambda: cache.relists()["configmaps"] > before, what="re-list after 410")


def test_cache_dropped_stream_rewatches_and_sees_later_changes(
    cache: ClusterCache, simulator: SimulatedCluster
) -> None:
    for round_ in range(3):
        simulator.drop_watches()
        simulator.create_pod(
            {
                "metadata": {"name": f"p{round_}", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
        )
        wait_for(lambda r=round_: f"p{r}" in cached_names(cache, "pods"), what=f"pod p{round_}")


def test_cache_outage_reports_failing_then_recovers_without_thread_leak(
    cache: ClusterCache, simulator: SimulatedCluster
) -> None:
    import threading

    threads_before = threading.active_count()
    for _ in range(5):
        simulator.set_unavailable(True)
        simulator.drop_watches()
        wait_for(lambda: cache.health().failing_since is not None, what="outage noticed")
        assert cache.health().last_error
        simulator.set_unavailable(False)
        wait_for(lambda: cache.health().failing_since is None, what="recovery noticed")
    assert "gpu-server-1" in cached_names(cache, "nodes")
    assert threading.active_count() <= threads_before + 1
