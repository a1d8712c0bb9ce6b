"""List+watch caches of the objects GPU Slots reads, so a page view costs the API server nothing.

One reflector (app.kube.reflector) per watched collection keeps it current; the cache
gathers them, wakes the snapshot builder on every change, and probes the API server so an
outage is noticed while every watch stream sits idle. While the API server cannot be
reached it keeps the last state, so the dashboard can serve it marked stale.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime

from kubernetes import client

from app.clock import utc_now
from app.domain.cluster import Manifest
from app.domain.plugin_target import PluginTarget
from app.kube.client import translate
from app.kube.reflector import PAGE_SIZE, Reflector, WatchTarget, WatchTiming
from app.kube.slim import PodSlimmer, slim_node

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheHealth:
    """Whether every collection is listed and watched, and since when one is failing."""

    synced: bool
    failing_since: datetime | None
    last_error: str | None
    refused: bool = False  # a read answered 403: RBAC, not the network


class ClusterCache:
    """Nodes, pods, every DaemonSet and the plugin namespaces' ConfigMaps, kept current.

    DaemonSets are watched cluster-wide so every plugin install is found wherever it runs
    (a Helm release namespace, the GPU Operator's namespace, per node group); ConfigMaps
    only in the plugin namespace and `config_namespaces` (docs/decisions/0011-*.md).
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        plugin: PluginTarget,
        config_namespaces: tuple[str, ...] = (),
        watch_timeout_s: int = 300,
        retry_delay_s: float = 1.0,
        probe_interval_s: float = 10.0,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self._version_api = client.VersionApi(api_client)
        self._probe_interval_s = probe_interval_s
        self._probe_failing_since: datetime | None = None
        self._probe_error: str | None = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self.generation = 0
        timing = WatchTiming(watch_timeout_s, retry_delay_s, page_size)
        self._reflectors = {
            name: Reflector(
                target,
                on_change=self._bump,
                timing=timing,
                stop=self._stop,
            )
            for name, target in watch_targets(api_client, plugin, config_namespaces).items()
        }

    def start(self) -> None:
        for reflector in self._reflectors.values():
            reflector.start()
        self._prober = threading.Thread(target=self._probe, name="api-probe", daemon=True)
        self._prober.start()

    def _probe(self) -> None:
        """Notice an outage while every watch stream sits idle (they break only on traffic)."""
        while not self._stop.wait(self._probe_interval_s):
            try:
                self._version_api.get_code(_request_timeout=5)
            except Exception as exc:
                if self._probe_failing_since is None:
                    self._probe_failing_since = utc_now()
                    self._probe_error = str(translate(exc, action="probing the API server"))
                    log.warning("%s", self._probe_error)
                    self._bump()
            else:
                if self._probe_failing_since is not None:
                    self._probe_failing_since = None
                    self._probe_error = None
                    self._bump()

    def stop(self) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        for reflector in self._reflectors.values():
            reflector.join(timeout_s=5)
        if hasattr(self, "_prober"):
            self._prober.join(timeout=5)

    def _bump(self) -> None:
        with self._changed:
            self.generation += 1
            self._changed.notify_all()

    def wait_for_change(self, seen_generation: int, timeout_s: float) -> int:
        """Block until the generation moves past `seen_generation` or the timeout passes."""
        with self._changed:
            self._changed.wait_for(
                lambda: self.generation != seen_generation or self._stop.is_set(), timeout_s
            )
            return self.generation

    def items(self, name: str, namespace: str | None = None) -> list[Manifest]:
        """A collection's objects (of one namespace, if named); "configmaps" holds those of
        every watched namespace."""
        found = self._reflectors[name].items(namespace)
        if name == "configmaps":
            for key, reflector in self._reflectors.items():
                if key.startswith("configmaps@"):
                    found = found + reflector.items(namespace)
        return found

    def absent(self) -> set[str]:
        """Collections whose (optional) API the server does not serve."""
        return {name for name, reflector in self._reflectors.items() if reflector.absent}

    def relists(self) -> dict[str, int]:
        return {name: reflector.relists for name, reflector in self._reflectors.items()}

    def health(self) -> CacheHealth:
        reflectors = self._reflectors.values()
        failing = [r.failing_since for r in reflectors if r.failing_since is not None]
        errors = [r.last_error for r in reflectors if r.last_error]
        if self._probe_failing_since is not None:
            failing.append(self._probe_failing_since)
            errors.append(self._probe_error or "API server unreachable")
        return CacheHealth(
            synced=all(r.synced for r in reflectors),
            failing_since=min(failing) if failing else None,
            last_error=errors[0] if errors else None,
            refused=any(r.refused for r in reflectors),
        )


def watch_targets(
    api_client: client.ApiClient, plugin: PluginTarget, config_namespaces: tuple[str, ...]
) -> dict[str, WatchTarget]:
    """The collections a cache watches, by name ("configmaps@ns" for the other namespaces)."""
    core = client.CoreV1Api(api_client)
    apps = client.AppsV1Api(api_client)
    dra = client.ResourceV1Api(api_client)
    targets = {
        "nodes": WatchTarget("nodes", core.list_node, transform=slim_node),
        "pods": WatchTarget("pods", core.list_pod_for_all_namespaces, transform=PodSlimmer()),
        "daemonsets": WatchTarget("daemonsets", apps.list_daemon_set_for_all_namespaces),
        # The fit check's quotas (optional: the simulated API server serves none).
        "resourcequotas": WatchTarget(
            "resourcequotas", core.list_resource_quota_for_all_namespaces, optional=True
        ),
        "configmaps": WatchTarget(
            "configmaps", core.list_namespaced_config_map, (plugin.namespace,)
        ),
        # Dynamic Resource Allocation (resource.k8s.io/v1, Kubernetes 1.34+): optional.
        "deviceclasses": WatchTarget("deviceclasses", dra.list_device_class, optional=True),
        "resourceslices": WatchTarget("resourceslices", dra.list_resource_slice, optional=True),
        "resourceclaims": WatchTarget(
            "resourceclaims", dra.list_resource_claim_for_all_namespaces, optional=True
        ),
        "resourceclaimtemplates": WatchTarget(
            "resourceclaimtemplates",
            dra.list_resource_claim_template_for_all_namespaces,
            optional=True,
        ),
    }
    for namespace in config_namespaces:
        if namespace != plugin.namespace:
            targets[f"configmaps@{namespace}"] = WatchTarget(
                f"configmaps@{namespace}", core.list_namespaced_config_map, (namespace,)
            )
    return targets
