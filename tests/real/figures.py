"""The figures a user reads off the dashboard, from its JSON API, in a comparable form.

Names, counts, roles, holders and finding codes; not what differs between any two
clusters by nature (UIDs, resourceVersions, generated name suffixes, timestamps, PIDs).
"""

from __future__ import annotations

import re
from typing import Any

import httpx

SUMMARY_KEYS = ("mode", "replicas", "resource", "resources", "totals", "dra", "pending_demand")
NODE_KEYS = (
    "ready",
    "gpu_node",
    "k3s",
    "mode",
    "resource",
    "replicas",
    "physical_gpus",
    "visible_gpus",
    "host_gpus",
    "failing_gpus",
    "expected_slots",
    "capacity",
    "allocatable",
    "requested",
    "free",
)
GPU_KEYS = (
    "index",
    "uuid",
    "name",
    "role",
    "slots",
    "held_slots",
    "memory_total_mib",
    "memory_used_mib",
    "memory_pods_mib",
    "memory_host_mib",
    "mig_mode",
)
HOLDER_KEYS = ("pod", "slots", "resource", "source", "claim", "device", "assignment")
_SUFFIX = re.compile(r"-[a-z0-9]{5}$")


def _plugin_pod(node: dict[str, Any]) -> Any:
    pod = node.get("plugin_pod")
    if not pod:
        return None
    return {k: v for k, v in pod.items() if k in ("phase", "ready", "reason", "state")}


def _gpu(gpu: dict[str, Any]) -> dict[str, Any]:
    figures = {k: gpu.get(k) for k in GPU_KEYS}
    figures["holders"] = sorted(
        tuple(_SUFFIX.sub("", str(h.get(k))) for k in HOLDER_KEYS) for h in gpu.get("holders") or []
    )
    figures["processes"] = sorted(
        (p.get("owner"), p.get("pod"), p.get("used_memory_mib"), p.get("command"))
        for p in gpu.get("processes") or []
    )
    figures["findings"] = sorted(gpu.get("finding_codes") or [])
    figures["dra_devices"] = sorted(
        (d.get("name"), tuple(_SUFFIX.sub("", c) for c in d.get("claims") or ()))
        for d in gpu.get("dra_devices") or []
    )
    return figures


def node_figures(node: dict[str, Any]) -> dict[str, Any]:
    figures = {k: node.get(k) for k in NODE_KEYS}
    figures["plugin_pod"] = _plugin_pod(node)
    figures["gpus"] = [_gpu(g) for g in node.get("gpus") or []]
    return figures


def dashboard_figures(client: httpx.Client) -> dict[str, Any]:
    """Summary and per-node figures of the dashboard at `client`'s base URL."""
    summary = client.get("/api/v1/summary").json()
    nodes = client.get("/api/v1/nodes").json()["nodes"]
    findings = client.get("/api/v1/findings").json()["findings"]
    plugin = dict(summary.get("plugin") or {})
    return {
        "summary": {k: summary.get(k) for k in SUMMARY_KEYS},
        "plugin": plugin,
        "findings": sorted(
            (f["code"], f.get("node") or "", _SUFFIX.sub("", f.get("pod") or "")) for f in findings
        ),
        "nodes": {n["name"]: node_figures(n) for n in nodes},
    }
