"""The objects the simulated DaemonSet controller and kubelet write for the plugin.

Pure builders: a plugin pod from its DaemonSet's template, an Event, the DaemonSet's
status from its pods, and the status of an ordinary pod the kubelet admits (or rejects).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from app.simulator.apiserver.store import JsonObject
from app.simulator.node.podstatus import pod_ready, pod_status, requested
from app.simulator.plugin.daemonsets import HASH_LABEL, template_hash
from app.simulator.plugin.outcome import PluginOutcome, plugin_pod_status

TOO_LARGE = (
    "Allocate failed due to rpc error: request for more than one shared "
    "GPU slot: maximum request size for shared resources is 1, which is unexpected"
)


def _owner_reference(ds: JsonObject) -> JsonObject:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": ds["metadata"]["name"],
        "uid": ds["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def plugin_pod(
    ds: JsonObject,
    node: str,
    outcome: PluginOutcome,
    *,
    name: str,
    namespace: str,
    now: str,
    node_ip: str,
) -> JsonObject:
    """The DaemonSet's pod on `node`, stamped from its current template, in the outcome's state."""
    template = copy.deepcopy(ds["spec"]["template"])
    meta = template.get("metadata") or {}
    ds_name = ds["metadata"]["name"]
    labels = {
        **(meta.get("labels") or {}),
        HASH_LABEL: template_hash(ds["spec"]["template"]),
        "pod-template-generation": str(ds["metadata"].get("generation", 1)),
    }
    spec = template.get("spec") or {}
    spec["nodeName"] = node
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    pod: JsonObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{ds_name}-",
            "namespace": namespace,
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [_owner_reference(ds)],
            "generation": 1,
        },
        "spec": spec,
        "status": plugin_pod_status(spec, outcome, now=now, node_ip=node_ip),
    }
    if not pod["metadata"]["annotations"]:
        del pod["metadata"]["annotations"]
    return pod


def event(
    involved: JsonObject,
    reason: str,
    message: str,
    *,
    event_type: str,
    name: str,
    namespace: str,
    now: str,
) -> JsonObject:
    """An Event about `involved`, from the DaemonSet controller or the kubelet."""
    meta = involved["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", "v1"),
            "kind": involved.get("kind", ""),
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {
            "component": "daemonset-controller" if reason.startswith("Success") else "kubelet"
        },
    }


def daemonset_status(ds: JsonObject, pods: Sequence[JsonObject]) -> JsonObject:
    """The DaemonSet's status as its controller counts its pods."""
    current = template_hash(ds.get("spec", {}).get("template") or {})
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    ready = sum(1 for p in pods if pod_ready(p))
    available = sum(1 for p in live if pod_ready(p))
    desired = len({p["spec"].get("nodeName") for p in pods})
    updated = sum(1 for p in live if p["metadata"].get("labels", {}).get(HASH_LABEL) == current)
    status = {
        "currentNumberScheduled": desired,
        "desiredNumberScheduled": desired,
        "numberMisscheduled": 0,
        "numberReady": ready,
        "numberAvailable": available,
        "updatedNumberScheduled": updated,
        "observedGeneration": ds["metadata"].get("generation", 1),
    }
    if desired - available:
        status["numberUnavailable"] = desired - available
    return status


def admitted_status(
    pod: JsonObject, outcome: PluginOutcome | None, *, now: str, node_ip: str
) -> JsonObject:
    """An ordinary pod's status once the kubelet admits it, or its rejection by the plugin."""
    too_large = (
        outcome is not None
        and outcome.sharing.fail_requests_greater_than_one
        and any(
            requested(c, resource) > 1
            for c in pod["spec"].get("containers") or []
            for resource in outcome.capacity
        )
    )
    if too_large:
        return {
            "phase": "Failed",
            "reason": "UnexpectedAdmissionError",
            "message": TOO_LARGE,
            "startTime": now,
        }
    return pod_status(pod["spec"], now=now, node_ip=node_ip)
