"""Helpers of the simulated plugin DaemonSet controller: which DaemonSets run the plugin,
which pods they own, template revisions and the GPU-feature-discovery labels it writes."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from app.simulator.inventory import NodeInventory
from app.simulator.plugin import PluginOutcome
from app.simulator.store import JsonObject

HASH_LABEL = "controller-revision-hash"


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
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": str(len(inventory.gpus)),
        "nvidia.com/gpu.replicas": str(outcome.replicas),
        "nvidia.com/gpu.sharing-strategy": outcome.strategy,
        "nvidia.com/mps.capable": str(
            outcome.strategy == "mps" and not any(g.mig_enabled for g in inventory.gpus)
        ).lower(),
    }
    if inventory.gpus:
        gpu = inventory.gpus[0]
        shared = outcome.replicas > 1 and not outcome.renamed
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
