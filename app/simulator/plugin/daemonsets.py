"""Helpers of the simulated plugin DaemonSet controller: which DaemonSets run the plugin,
which pods they own, template revisions and the GPU-feature-discovery labels it writes."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.simulator.apiserver.store import JsonObject
from app.simulator.node.inventory import NodeInventory
from app.simulator.plugin.outcome import PluginOutcome

HASH_LABEL = "controller-revision-hash"


@dataclass(frozen=True)
class PluginDaemonSet:
    """The configured plugin DaemonSet: it runs first on a node its nodeSelector matches."""

    name: str = "nvidia-device-plugin-daemonset"
    namespace: str = "kube-system"


DEFAULT_PLUGIN = PluginDaemonSet()


def template_hash(template: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return digest[:10]


def gfd_product(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9\-_. ]", "", name)
    return re.sub(r"\s+", "-", cleaned.strip())


def runs_plugin(ds: JsonObject) -> bool:
    """A DaemonSet running the device plugin itself (not GFD or the MPS daemon)."""
    name = str(ds["metadata"]["name"])
    if "gpu-feature-discovery" in name or "mps-control-daemon" in name:
        return False
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    return any(
        "k8s-device-plugin" in str(c.get("image", ""))
        and "config-manager" not in (c.get("command") or [])
        for c in spec.get("containers") or []
    )


def gfd_labels(inventory: NodeInventory, outcome: PluginOutcome) -> dict[str, str]:
    sharing = outcome.sharing
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": str(len(inventory.gpus)),
        "nvidia.com/gpu.replicas": str(sharing.replicas),
        "nvidia.com/gpu.sharing-strategy": sharing.strategy,
        "nvidia.com/mps.capable": str(
            sharing.strategy == "mps" and not any(g.mig_enabled for g in inventory.gpus)
        ).lower(),
    }
    if inventory.gpus:
        gpu = inventory.gpus[0]
        shared = sharing.replicas > 1 and not sharing.renamed
        labels["nvidia.com/gpu.product"] = gfd_product(gpu.name) + ("-SHARED" if shared else "")
        if gpu.memory_supported:
            labels["nvidia.com/gpu.memory"] = str(gpu.memory_total_mib)
    return labels


def owned_by(pod: JsonObject, ds: JsonObject) -> bool:
    return pod["metadata"].get("namespace") == ds["metadata"].get("namespace") and any(
        ref.get("kind") == "DaemonSet" and ref.get("name") == ds["metadata"]["name"]
        for ref in pod["metadata"].get("ownerReferences") or []
    )


def has_config_manager(pod_spec: Mapping[str, Any]) -> bool:
    return any(
        any(e.get("name") == "CONFIG_FILE_DST" for e in c.get("env") or [])
        for c in list(pod_spec.get("containers") or []) + list(pod_spec.get("initContainers") or [])
    )


def sidecar_crashed(pod: JsonObject, message: str) -> JsonObject:
    """The pod after config-manager's sidecar failed: it crash-loops, the pod is NotReady;
    the plugin container keeps running with the config it had."""
    crashed = copy.deepcopy(pod)
    sidecars = {
        c.get("name")
        for c in crashed["spec"].get("containers") or []
        if any(e.get("name") == "CONFIG_FILE_DST" for e in c.get("env") or [])
    }
    status = crashed.setdefault("status", {})
    for entry in status.get("containerStatuses") or []:
        if entry.get("name") in sidecars:
            entry.update(
                ready=False,
                started=False,
                restartCount=int(entry.get("restartCount") or 0) + 1,
                state={"waiting": {"reason": "CrashLoopBackOff", "message": message}},
            )
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("Ready", "ContainersReady"):
            condition["status"] = "False"
    return crashed


def max_unavailable(ds: JsonObject, desired: int) -> int:
    """The DaemonSet's RollingUpdate budget: an int, or a percentage of desired (rounded up)."""
    rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    value = rolling.get("maxUnavailable", 1)
    if isinstance(value, str) and value.endswith("%"):
        try:
            return max(0, -(-int(value[:-1]) * desired // 100))
        except ValueError:
            return 1
    return value if isinstance(value, int) and value >= 0 else 1


def may_replace_available(ds: JsonObject, unavailable_elsewhere: int, desired: int) -> bool:
    """Whether the DaemonSet controller would delete an available pod of an old template now.

    OnDelete never does; RollingUpdate (without surge) only while fewer than
    `maxUnavailable` of its nodes lack an available pod, so a pod that never becomes ready
    (a crash-looping node) holds the whole rollout.
    """
    strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy == "OnDelete":
        return False
    return unavailable_elsewhere < max_unavailable(ds, desired)


def node_resources(
    node: Mapping[str, Any], outcome: PluginOutcome | None, served: set[str]
) -> JsonObject:
    """The Node status patch for the plugin's outcome (resources it stopped serving -> 0)."""
    status = node.get("status") or {}
    capacity = dict(status.get("capacity") or {})
    allocatable = dict(status.get("allocatable") or {})
    served.update(k for k in capacity if k.startswith("nvidia.com/"))
    new_capacity = outcome.capacity if outcome else {}
    for resource in served - set(new_capacity):
        capacity[resource] = "0"
        allocatable[resource] = "0"
    for resource, count in new_capacity.items():
        capacity[resource] = str(count)
        allocatable[resource] = str(outcome.allocatable[resource] if outcome else 0)
        served.add(resource)
    return {"status": {"capacity": capacity, "allocatable": allocatable}}
