"""What each simulated node's kubelet writes: its Node, its pods' status, the plugin's devices.

Pure functions of the objects read from the API server and the node's simulated GPUs; the
actor (`actor.py`) reads and writes them. The plugin's outcome on a node is what
`app.simulator.plugin.advertised` says for the plugin pod's own spec (the spec the
DaemonSet controller stamped), as in the embedded simulator.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from app.simulator.node.inventory import NodeInventory
from app.simulator.node.podstatus import pod_status
from app.simulator.plugin.advertised import advertised
from app.simulator.plugin.daemonsets import gfd_labels, has_config_manager, runs_plugin
from app.simulator.plugin.outcome import PluginOutcome, plugin_pod_status

JsonObject = dict[str, Any]
ConfigMapLookup = Callable[[str], Mapping[str, Any] | None]


def node_ip(inventories: Mapping[str, NodeInventory], node: str) -> str:
    """The node's InternalIP, as `scenario.node_object` numbers them (scenario order)."""
    return f"10.0.0.{10 + list(inventories).index(node) % 240}"


def is_plugin_pod(pod: Mapping[str, Any]) -> bool:
    """A DaemonSet's pod that runs NVIDIA's device plugin."""
    owners = [
        ref
        for ref in pod["metadata"].get("ownerReferences") or []
        if ref.get("kind") == "DaemonSet"
    ]
    return any(
        runs_plugin({"metadata": owner, "spec": {"template": {"spec": pod.get("spec") or {}}}})
        for owner in owners
    )


def needs_start(pod: Mapping[str, Any]) -> bool:
    """Bound, not being deleted, and no status written by a kubelet yet."""
    status = pod.get("status") or {}
    return (
        not pod["metadata"].get("deletionTimestamp")
        and status.get("phase") in (None, "Pending")
        and not status.get("containerStatuses")
    )


def plugin_outcome(
    pod: Mapping[str, Any],
    inventory: NodeInventory,
    configmaps: ConfigMapLookup,
    labels: Mapping[str, str],
) -> PluginOutcome:
    return advertised(pod.get("spec") or {}, inventory, configmaps, node_labels=labels)


def reloads(pod: Mapping[str, Any]) -> bool:
    """A plugin pod with NVIDIA's config-manager sidecar follows its node's label live."""
    return has_config_manager(pod.get("spec") or {})


def started_status(
    pod: Mapping[str, Any], outcome: PluginOutcome | None, *, now: str, ip: str
) -> JsonObject:
    """The status a kubelet writes once it ran the pod (the plugin's state for its pod)."""
    spec = pod.get("spec") or {}
    status = (
        pod_status(spec, now=now, node_ip=ip)
        if outcome is None
        else plugin_pod_status(spec, outcome, now=now, node_ip=ip)
    )
    status.pop("qosClass", None)  # set by the API server at creation, immutable
    return status


def gfd_patch(
    node: Mapping[str, Any], inventory: NodeInventory, outcome: PluginOutcome | None
) -> JsonObject | None:
    """The labels GPU feature discovery writes, where the scenario runs it; None: no change."""
    if outcome is None or outcome.state != "running" or not inventory.gfd:
        return None
    wanted = gfd_labels(inventory, outcome)
    labels = node["metadata"].get("labels") or {}
    if all(labels.get(k) == v for k, v in wanted.items()):
        return None
    return {"metadata": {"labels": wanted}}


def registration(node: Mapping[str, Any]) -> JsonObject:
    """The Node as a kubelet registers it (what the API server accepts on create)."""
    obj = copy.deepcopy(dict(node))
    obj["metadata"].pop("uid", None)
    obj["metadata"].pop("resourceVersion", None)
    return obj


def reports_ready(node: Mapping[str, Any]) -> bool:
    """The scenario's node posts status (its kubelet is alive)."""
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def lease(node: str, now: str) -> JsonObject:
    """The node's heartbeat Lease (the node lifecycle controller reads its renewTime)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": node, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now},
    }
