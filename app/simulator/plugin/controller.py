"""The simulated DaemonSet controller and kubelet for the NVIDIA device plugin.

Every DaemonSet that runs the plugin is controlled (the configured one, a Helm release's,
one per node group): each GPU node runs the pod of the first of them, by namespace/name
with the configured one first, whose nodeSelector matches it. When a plugin DaemonSet's
pod template changes (or at start), its pods are deleted and recreated on every matching
node with a simulated inventory, and each node's capacity and allocatable are recomputed
with `plugin.advertised` (config-manager reads a node label). A ConfigMap change alone does
nothing, exactly like the real cluster. A resource the plugin no longer serves stays in
the node status as "0": the kubelet keeps the key of a device-plugin resource and zeroes
it (after a grace period the simulator skips) rather than removing it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

from app.simulator.apiserver.registry import Registry, random_suffix, timestamp
from app.simulator.apiserver.resources import CONFIGMAP, DAEMONSET, EVENT, NODE, POD
from app.simulator.apiserver.selectors import match_label_map
from app.simulator.apiserver.store import Change, JsonObject
from app.simulator.node.affinity import affinity_allows
from app.simulator.node.inventory import NodeInventory
from app.simulator.node.podstatus import pod_ready
from app.simulator.plugin.advertised import advertised
from app.simulator.plugin.daemonsets import (
    DEFAULT_PLUGIN,
    HASH_LABEL,
    PluginDaemonSet,
    gfd_labels,
    has_config_manager,
    may_replace_available,
    node_resources,
    owned_by,
    runs_plugin,
    sidecar_crashed,
    template_hash,
)
from app.simulator.plugin.objects import admitted_status, daemonset_status, event, plugin_pod
from app.simulator.plugin.outcome import PluginOutcome, plugin_pod_status


class PluginController:
    """Runs the plugin DaemonSet on the simulated nodes and plays their kubelets."""

    def __init__(
        self,
        registry: Registry,
        inventories: Mapping[str, NodeInventory],
        *,
        daemonset: PluginDaemonSet = DEFAULT_PLUGIN,
    ) -> None:
        self.registry = registry
        self.inventories = dict(inventories)
        self.name = daemonset.name
        self.namespace = daemonset.namespace
        self.outcomes: dict[str, PluginOutcome] = {}
        self._served: dict[str, set[str]] = {}
        self._lock = threading.RLock()

    # reacting to writes --------------------------------------------------------------------

    def on_change(self, change: Change) -> None:
        obj = change.entry.obj
        meta = obj["metadata"]
        if change.resource is DAEMONSET:
            if not runs_plugin(obj) and not self._is_main(obj):
                return
            # Any spec change: a new template rolls, a new updateStrategy may free a held
            # rollout, and the status observes the generation either way.
            if change.type == "DELETED" or obj.get("spec") != (change.old or {}).get("spec"):
                self.sync_all()
        elif change.resource is NODE and meta["name"] in self.inventories:
            old_labels = ((change.old or {}).get("metadata") or {}).get("labels")
            if change.type == "DELETED" or change.old is None or old_labels != meta.get("labels"):
                self.sync_node(meta["name"])
        elif change.resource is POD:
            self._on_pod(change)
        elif change.resource is CONFIGMAP and meta.get("namespace") == self.namespace:
            self._on_configmap(change)

    def _on_configmap(self, change: Change) -> None:
        """Hook: a ConfigMap of the plugin's namespace changed (the kubelet may retry)."""

    def _on_pod(self, change: Change) -> None:
        pod = change.entry.obj
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        if change.type == "DELETED":
            if self._is_plugin_pod(pod):
                self.sync_node(node)
        elif change.type == "ADDED" and not self._is_plugin_pod(pod):
            self._start_pod(pod)

    def _is_main(self, ds: JsonObject) -> bool:
        meta = ds["metadata"]
        return bool(meta["name"] == self.name and meta.get("namespace") == self.namespace)

    def _is_plugin_pod(self, pod: JsonObject) -> bool:
        namespace = pod["metadata"].get("namespace")
        owners = {
            ref.get("name")
            for ref in pod["metadata"].get("ownerReferences") or []
            if ref.get("kind") == "DaemonSet"
        }
        return any(
            ds["metadata"]["name"] in owners and ds["metadata"].get("namespace") == namespace
            for ds in self._daemonsets()
        ) or (namespace == self.namespace and self.name in owners)

    # the DaemonSet controller ------------------------------------------------------------------

    def _daemonset(self) -> JsonObject | None:
        entry = self.registry.store.get(DAEMONSET, self.namespace, self.name)
        return entry.obj if entry else None

    def _daemonsets(self) -> list[JsonObject]:
        """Every plugin DaemonSet, the configured one first, then by namespace/name."""
        main = self._daemonset()
        others = sorted(
            (
                ds
                for ds in self.registry.store.objects(DAEMONSET)
                if not self._is_main(ds) and runs_plugin(ds)
            ),
            key=lambda d: (d["metadata"].get("namespace", ""), d["metadata"]["name"]),
        )
        return ([main] if main is not None else []) + others

    def _plugin_pods(
        self, node: str | None = None, ds: JsonObject | None = None
    ) -> list[JsonObject]:
        # the node first: it is one lookup, and this runs once per node of a rollout
        return [
            p
            for p in self.registry.store.objects(POD)
            if (node is None or p["spec"].get("nodeName") == node)
            and (ds is None or owned_by(p, ds))
            and self._is_plugin_pod(p)
        ]

    def sync_all(self) -> None:
        """Bring every simulated node's plugin pod up to the current template."""
        with self.registry.store.batch(), self._lock:
            for node in self.inventories:
                self._sync_node(node)
            self._write_daemonset_status()

    def sync_node(self, node: str) -> None:
        with self.registry.store.batch(), self._lock:
            self._sync_node(node)
            self._write_daemonset_status()

    def _defer_replacement(self, node_name: str) -> bool:
        """Hook: True when the replacement of this node's plugin pod runs paced elsewhere."""
        return False

    def _pod_started(self, pod: JsonObject, outcome: PluginOutcome) -> None:
        """Hook: a plugin pod was created with this outcome (its container's log)."""

    def _owner(self, labels: Mapping[str, str], node: str = "") -> JsonObject | None:
        """The DaemonSet whose pod runs on the node: nodeSelector and required node affinity."""
        for ds in self._daemonsets():
            spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
            if match_label_map(spec.get("nodeSelector"), labels) and affinity_allows(
                spec, labels, node
            ):
                return ds
        return None

    def _node_owner(self, node: str) -> JsonObject | None:
        entry = self.registry.store.get(NODE, None, node)
        labels = (entry.obj["metadata"].get("labels") or {}) if entry else {}
        return self._owner(labels, node) if entry else None

    def _sync_node(self, node_name: str) -> None:
        inventory = self.inventories.get(node_name)
        node_entry = self.registry.store.get(NODE, None, node_name)
        if inventory is None or node_entry is None:
            return
        labels = node_entry.obj["metadata"].get("labels") or {}
        ds = self._owner(labels, node_name)
        template = (ds or {}).get("spec", {}).get("template") or {}
        spec = template.get("spec") or {}
        desired = ds is not None
        current_hash = template_hash(template)
        pods = self._plugin_pods(node_name)
        outcome = (
            advertised(spec, inventory, self._configmaps_of(ds), node_labels=labels)
            if ds is not None
            else None
        )
        running = next(
            (
                p
                for p in pods
                if ds is not None
                and owned_by(p, ds)
                and p["metadata"].get("labels", {}).get(HASH_LABEL) == current_hash
            ),
            None,
        )
        if running is not None and outcome is not None:
            # config-manager re-links the config when the node label changes and signals the
            # plugin, which restarts in place; without config-manager a label does nothing.
            stale = outcome != self.outcomes.get(node_name)
            healed = outcome.state == "running" and not pod_ready(running)  # sidecar back
            if has_config_manager(spec) and (stale or healed):
                self._reload(running, node_name, outcome)
            return
        if desired and any(pod_ready(p) for p in pods) and not self._budget_allows(ds, node_name):
            return  # the DaemonSet controller keeps this node's old pod for now
        if desired and pods and self._defer_replacement(node_name):
            return
        for pod in pods:
            self.registry.remove(POD, pod["metadata"]["namespace"], pod["metadata"]["name"])
        if not desired or ds is None or outcome is None:
            self.outcomes.pop(node_name, None)
            self._write_node(node_name, None)
            return
        self.outcomes[node_name] = outcome
        pod = self._plugin_pod(ds, node_name, outcome)
        self.registry.put(POD, pod)
        self._pod_started(pod, outcome)
        self._event(ds, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", "Normal")
        self._outcome_events(pod, outcome)
        self._write_node(node_name, outcome)

    def _outcome_events(self, pod: JsonObject, outcome: PluginOutcome) -> None:
        """The kubelet's event for a plugin container that crashes or cannot mount."""
        if outcome.state == "crash":
            self._event(pod, "BackOff", f"Back-off restarting failed container: {outcome.message}")
        elif outcome.state == "pending":
            self._event(pod, "FailedMount", outcome.message)

    def _budget_allows(self, ds: JsonObject | None, node_name: str) -> bool:
        """The rollout may take this node's available pod away (see may_replace_available)."""
        if ds is None:
            return True
        nodes: set[str] = set()
        ready: set[str] = set()
        for pod in self._plugin_pods(ds=ds):  # one pass: this runs for every node it replaces
            node = pod["spec"].get("nodeName")
            nodes.add(node)
            if pod_ready(pod):
                ready.add(node)
        unavailable = len(nodes - ready - {node_name})
        return may_replace_available(ds, unavailable, len(nodes))

    def _reload(self, pod: JsonObject, node_name: str, outcome: PluginOutcome) -> None:
        """The sidecar saw a new node label: same pod, the plugin restarted with the config.

        A key it cannot find crashes the sidecar; the plugin keeps serving the old config.
        """
        if outcome.state == "crash" and outcome.message.startswith("config-manager"):
            self.registry.put(POD, sidecar_crashed(pod, outcome.message))
            self._event(pod, "BackOff", f"Back-off restarting failed container: {outcome.message}")
            return
        self.outcomes[node_name] = outcome
        reloaded = copy.deepcopy(pod)
        now = timestamp(self.registry.clock())
        reloaded["status"] = plugin_pod_status(
            pod["spec"], outcome, now=now, node_ip=self._node_ip(node_name)
        )
        self.registry.put(POD, reloaded)
        self._pod_started(reloaded, outcome)
        self._write_node(node_name, outcome)

    def _configmaps_of(self, ds: JsonObject) -> Callable[[str], Mapping[str, Any] | None]:
        namespace = ds["metadata"].get("namespace", self.namespace)

        def lookup(name: str) -> Mapping[str, Any] | None:
            entry = self.registry.store.get(CONFIGMAP, namespace, name)
            return entry.obj if entry else None

        return lookup

    def _write_node(self, node_name: str, outcome: PluginOutcome | None) -> None:
        entry = self.registry.store.get(NODE, None, node_name)
        if entry is None:
            return
        node = copy.deepcopy(entry.obj)
        served = self._served.setdefault(node_name, set())
        node.setdefault("status", {}).update(node_resources(node, outcome, served)["status"])
        inventory = self.inventories[node_name]
        if outcome is not None and outcome.state == "running" and inventory.gfd:
            labels = node["metadata"].setdefault("labels", {})
            labels.update(gfd_labels(inventory, outcome))
        self.registry.put(NODE, node)

    def _plugin_pod(self, ds: JsonObject, node: str, outcome: PluginOutcome) -> JsonObject:
        now = timestamp(self.registry.clock())
        ds_name = ds["metadata"]["name"]
        namespace = ds["metadata"].get("namespace", self.namespace)
        name = f"{ds_name}-{random_suffix()}"
        while self.registry.store.get(POD, namespace, name) is not None:
            name = f"{ds_name}-{random_suffix()}"  # 5 characters collide at 1,000s of nodes
        return plugin_pod(
            ds, node, outcome, name=name, namespace=namespace, now=now, node_ip=self._node_ip(node)
        )

    def _node_ip(self, node: str) -> str:
        names = list(self.inventories)
        index = names.index(node) if node in names else 0
        return f"10.0.0.{10 + index % 240}"

    def _write_daemonset_status(self) -> None:
        for ds in self._daemonsets():
            self._write_status_of(ds)

    def _write_status_of(self, ds: JsonObject) -> None:
        status = daemonset_status(ds, self._plugin_pods(ds=ds))
        if ds.get("status") != status:
            new = copy.deepcopy(ds)
            new["status"] = status
            self.registry.put(DAEMONSET, new)

    def _event(
        self, involved: JsonObject, reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        meta = involved["metadata"]
        now = timestamp(self.registry.clock())
        written = event(
            involved,
            reason,
            message,
            event_type=event_type,
            name=f"{meta['name']}.{random_suffix(10)}",
            namespace=meta.get("namespace") or self.namespace,
            now=now,
        )
        self.registry.put(EVENT, written)

    # the kubelet for ordinary pods ---------------------------------------------------------

    def _start_pod(self, pod: JsonObject) -> None:
        """A new pod bound to a node: run it (or reject it, as the plugin would)."""
        status = pod.get("status") or {}
        if status.get("phase") not in (None, "Pending") or status.get("containerStatuses"):
            return
        node = pod["spec"]["nodeName"]
        if self.registry.store.get(NODE, None, node) is None:
            return
        new = copy.deepcopy(pod)
        now = timestamp(self.registry.clock())
        outcome = self.outcomes.get(node)
        new["status"] = admitted_status(pod, outcome, now=now, node_ip=self._node_ip(node))
        self.registry.put(POD, new)
