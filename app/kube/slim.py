"""What the cache keeps of a pod: the fields GPU Slots reads, not the whole manifest.

Applied at watch time (the list and every watch event) to pods that no DaemonSet owns:
those are the workload, nearly all of the cache at scale. Plugin pods (owned by a
DaemonSet) are kept whole, since the engine reads their spec the way it reads the
DaemonSet's template. Dropped are parts nothing here reads: the server's bookkeeping
(`managedFields`, the last-applied annotation), volumes, probes, commands, ports,
security contexts, addresses and transition times. Repeated short values (namespace,
phase, images, condition types) are interned so 150,000 pods share one copy of each.
`tests/kube/test_slim.py` builds snapshots from whole and slimmed pods and requires them equal.
"""

from __future__ import annotations

import sys
from typing import Any

from app.domain.cluster import Manifest

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
POD_SPEC_DROPPED = (
    "volumes",
    "dnsPolicy",
    "dnsConfig",
    "enableServiceLinks",
    "terminationGracePeriodSeconds",
    "serviceAccount",
    "serviceAccountName",
    "securityContext",
    "schedulerName",
    "preemptionPolicy",
    "hostname",
    "subdomain",
    "imagePullSecrets",
    "readinessGates",
    "topologySpreadConstraints",
)
CONTAINER_DROPPED = (
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "command",
    "args",
    "ports",
    "securityContext",
    "workingDir",
    "stdin",
    "tty",
)
STATUS_DROPPED = ("podIP", "podIPs", "hostIP", "hostIPs", "qosClass")
CONDITION_DROPPED = ("lastTransitionTime", "lastProbeTime")
CONTAINER_STATUS_DROPPED = ("imageID", "lastState", "volumeMounts", "allocatedResources")


def _owned_by_daemonset(manifest: Manifest) -> bool:
    owners = (manifest.get("metadata") or {}).get("ownerReferences") or []
    return any(owner.get("kind") == "DaemonSet" for owner in owners)


def _intern(mapping: dict[str, Any], key: str) -> None:
    value = mapping.get(key)
    if isinstance(value, str) and len(value) <= 128:
        mapping[key] = sys.intern(value)


def _drop(mapping: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        mapping.pop(key, None)


def slim_pod(manifest: Manifest) -> Manifest:
    """`manifest` with the unread parts removed (in place: it was just parsed for us)."""
    if _owned_by_daemonset(manifest):
        return manifest
    meta = manifest.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
        _intern(meta, "namespace")
    spec = manifest.get("spec")
    if isinstance(spec, dict):
        _drop(spec, POD_SPEC_DROPPED)
        _intern(spec, "nodeName")
        for group in ("containers", "initContainers", "ephemeralContainers"):
            for container in spec.get(group) or []:
                if isinstance(container, dict):
                    _drop(container, CONTAINER_DROPPED)
                    _intern(container, "name")
                    _intern(container, "image")
    status = manifest.get("status")
    if isinstance(status, dict):
        _drop(status, STATUS_DROPPED)
        _intern(status, "phase")
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict):
                _drop(condition, CONDITION_DROPPED)
                _intern(condition, "type")
                _intern(condition, "status")
        for group in ("containerStatuses", "initContainerStatuses"):
            for container in status.get(group) or []:
                if isinstance(container, dict):
                    _drop(container, CONTAINER_STATUS_DROPPED)
                    _intern(container, "name")
                    _intern(container, "image")
    return manifest
