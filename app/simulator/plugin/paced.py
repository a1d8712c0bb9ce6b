"""The plugin controller with a kubelet's habits: logs, mount retries, a paced rollout.

- `kubectl logs` of a plugin pod answers the lines the real plugin prints at start
  (`log.py`).
- A plugin pod stuck in ContainerCreating because its ConfigMap is missing starts once
  the ConfigMap exists again: the kubelet retries the mount (it does not recreate the pod).
- With a `RolloutPace`, replacing the plugin pods runs node by node on a worker thread
  (`app/simulator/plugin/rollout.py`), so rollouts take the time they take on a cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from app.simulator.apiserver.registry import Registry, timestamp
from app.simulator.apiserver.resources import NODE, POD
from app.simulator.apiserver.store import Change, JsonObject
from app.simulator.node.inventory import NodeInventory
from app.simulator.node.podstatus import pod_ready
from app.simulator.plugin.advertised import advertised
from app.simulator.plugin.controller import PluginController
from app.simulator.plugin.daemonsets import (
    DEFAULT_PLUGIN,
    HASH_LABEL,
    PluginDaemonSet,
    template_hash,
)
from app.simulator.plugin.log import plugin_log
from app.simulator.plugin.outcome import PluginOutcome, plugin_pod_status
from app.simulator.plugin.rollout import RolloutPace, RolloutWorker


class PacedPluginController(PluginController):
    """`PluginController` plus pod logs, ConfigMap mount retries and a paced rollout."""

    def __init__(
        self,
        registry: Registry,
        inventories: Mapping[str, NodeInventory],
        *,
        pace: RolloutPace | None = None,
        daemonset: PluginDaemonSet = DEFAULT_PLUGIN,
    ) -> None:
        super().__init__(registry, inventories, daemonset=daemonset)
        self._logs: dict[tuple[str, str], str] = {}
        self.worker = RolloutWorker(
            pace or RolloutPace(),
            terminate=self._terminate_step,
            create=self._create_step,
            start=self._start_step,
        )

    # logs ---------------------------------------------------------------------------------

    def _pod_started(self, pod: JsonObject, outcome: PluginOutcome) -> None:
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if outcome.state == "pending":
            self._logs.pop(key, None)
        else:
            self._logs[key] = plugin_log(pod["spec"], outcome, now=self.registry.clock())
        if len(self._logs) > 10_000:  # pods come and go; keep the newest
            for stale in list(self._logs)[:1_000]:
                del self._logs[stale]

    def pod_log(self, namespace: str, name: str, container: str | None) -> str | None:
        """What `kubectl logs` shows for a plugin pod (None: not a plugin pod, or not started)."""
        del container  # the plugin pod runs one container that logs
        return self._logs.get((namespace, name))

    # kubelet: retry a missing ConfigMap mount -------------------------------------------------

    def _on_configmap(self, change: Change) -> None:
        if change.type != "ADDED":
            return
        with self.registry.store.batch(), self._lock:
            for node, outcome in list(self.outcomes.items()):
                if outcome.state == "pending" and not self.worker.is_rolling(node):
                    self._retry_mount(node)
            self._write_daemonset_status()

    def _labels(self, node: str) -> dict[str, str]:
        entry = self.registry.store.get(NODE, None, node)
        return dict(entry.obj["metadata"].get("labels") or {}) if entry else {}

    def _current(self, node: str) -> tuple[JsonObject, JsonObject, PluginOutcome] | None:
        """The node's DaemonSet, its one plugin pod, and what the plugin does there now."""
        ds = self._node_owner(node)
        inventory = self.inventories.get(node)
        pods = self._plugin_pods(node)
        if ds is None or inventory is None or len(pods) != 1:
            return None
        spec = ds["spec"]["template"].get("spec") or {}
        outcome = advertised(
            spec, inventory, self._configmaps_of(ds), node_labels=self._labels(node)
        )
        return ds, pods[0], outcome

    def _start_container(self, pod: JsonObject, node: str, outcome: PluginOutcome) -> None:
        """The plugin container starts with this outcome: its pod, log, events and node."""
        started = copy.deepcopy(pod)
        now = timestamp(self.registry.clock())
        started["status"] = plugin_pod_status(
            started["spec"], outcome, now=now, node_ip=self._node_ip(node)
        )
        self.outcomes[node] = outcome
        self.registry.put(POD, started)
        self._pod_started(started, outcome)
        self._outcome_events(started, outcome)
        self._write_node(node, outcome)

    def _retry_mount(self, node: str) -> None:
        current = self._current(node)
        if current is not None and current[2].state != "pending":
            self._start_container(current[1], node, current[2])

    # paced rollout ----------------------------------------------------------------------------

    def _defer_replacement(self, node_name: str) -> bool:
        return self.worker.pace.paced and self.worker.submit(node_name)

    def _sync_node(self, node_name: str) -> None:
        if self.worker.is_rolling(node_name):
            return  # the worker finishes this node, then syncs it again
        super()._sync_node(node_name)

    def _terminate_step(self, node: str) -> bool:
        """Mark the node's plugin pods as terminating (deletionTimestamp)."""
        with self.registry.store.batch(), self._lock:
            pods = self._plugin_pods(node)
            if any(pod_ready(p) for p in pods) and not self._budget_allows(
                self._node_owner(node), node
            ):
                return False  # another node's pod is still unavailable: this one waits
            now = timestamp(self.registry.clock())
            for pod in pods:
                marked = copy.deepcopy(pod)
                marked["metadata"]["deletionTimestamp"] = now
                marked["metadata"]["deletionGracePeriodSeconds"] = 30
                self.registry.put(POD, marked)
            self._write_daemonset_status()
        return True

    def _create_step(self, node: str) -> bool:
        """Remove the old pods; create the new one in ContainerCreating."""
        with self.registry.store.batch(), self._lock:
            for pod in self._plugin_pods(node):
                self.registry.remove(POD, pod["metadata"]["namespace"], pod["metadata"]["name"])
            ds = self._node_owner(node)
            if ds is None:
                self._write_daemonset_status()
                return False
            pod = self._plugin_pod(ds, node, PluginOutcome("pending", ""))
            self.registry.put(POD, pod)
            self._event(ds, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", "Normal")
            self._write_daemonset_status()
        return True

    def _start_step(self, node: str) -> None:
        """The new container starts: the plugin's outcome decides the pod and the node."""
        with self.registry.store.batch(), self._lock:
            current = self._current(node)
            if current is not None:
                ds, pod, outcome = current
                revision = pod["metadata"].get("labels", {}).get(HASH_LABEL)
                if revision == template_hash(ds["spec"]["template"]):
                    self._start_container(pod, node, outcome)
            self._write_daemonset_status()
        self.sync_node(node)

    def stop(self) -> None:
        """Finish queued replacements at once; later ones are instant until `resume()`."""
        self.worker.stop()

    def resume(self) -> None:
        self.worker.resume()
