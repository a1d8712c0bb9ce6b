"""What the cache keeps of a pod: the fields GPU Slots reads, not the whole manifest.

Applied at watch time (each listed page and every watch event) to pods that no
DaemonSet owns: those are the workload, nearly all of the cache at scale. Plugin pods
(owned by a DaemonSet) are kept whole, since the engine reads their spec the way it
reads the DaemonSet's template.

A workload pod is rebuilt from the fields read anywhere (the engine, findings, usage,
rollout, DRA): names and version, labels, annotations, owners, node, containers' images,
env NVIDIA_VISIBLE_DEVICES and resources, overhead, resource claims, phase, reason, start
time, the Ready condition, and each container's restarts and waiting/terminated state.
Anything else a real pod carries (managedFields, volumes, probes, tolerations, IPs...)
is not kept. The rebuilt dicts are sized for what they hold, not for what was popped.

`Shared` keeps parts that many pods repeat once: the containers of one template, the
labels and owners of one ReplicaSet, the usual conditions and container statuses; so
150,000 pods of a few hundred templates hold a few hundred copies. Cached manifests are
never mutated (the engine's pod index already relies on that), so sharing is safe.
`tests/kube/test_slim.py` builds snapshots from whole and slimmed pods and requires them
equal, on the benchmark cluster and every built-in scenario.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from app.domain.accounting.pods import is_daemon_pod
from app.domain.cluster import Manifest

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
META_KEPT = ("name", "uid", "resourceVersion")  # unique to the pod
META_INTERNED = ("namespace", "creationTimestamp")  # repeated across pods
META_SHARED = ("labels", "ownerReferences")
OWNER_KEPT = ("kind", "name", "controller")
CONTAINER_KEPT = ("name", "image", "resources", "restartPolicy")
STATUS_KEPT = ("phase", "reason", "startTime")
STATUS_WHOLE = ("resourceClaimStatuses", "extendedResourceClaimStatus")
Reduce = Callable[[Any], Any]
PRUNE_MIN = 4_096  # Shared forgets parts no pod holds any more once it grows past this


class Shared:
    """One copy of each equal part (dicts and lists of plain JSON values), as pods repeat."""

    def __init__(self) -> None:
        self._parts: dict[object, Any] = {}
        self._prune_at = PRUNE_MIN

    def __len__(self) -> int:
        return len(self._parts)

    def one(self, value: Any, key: object = None) -> Any:
        """`value`, or an equal part kept earlier.

        `key` names the value exactly: by default its repr (equal repr, equal value: same
        types, same order); callers pass a cheaper tagged tuple for a shape they know.
        """
        if key is None:
            key = repr(value)
        kept = self._parts.get(key)
        if kept is not None:
            return kept
        self._parts[key] = value
        if len(self._parts) >= self._prune_at:
            self.prune()
        return value

    def prune(self) -> None:
        """Forget parts held only here (their pods were deleted or changed)."""
        # A part nobody else holds has two references: this dict's and the call's own.
        parts = self._parts
        self._parts = {key: parts[key] for key in list(parts) if sys.getrefcount(parts[key]) > 2}
        self._prune_at = max(PRUNE_MIN, 2 * len(self._parts))


def _text(value: Any) -> Any:
    """A pod's own short strings interned (namespaces, nodes, phases, times repeat).

    Strings inside shared parts are not: those parts are kept once anyway.
    """
    return sys.intern(value) if type(value) is str and len(value) <= 64 else value


def _share(shared: Shared | None, value: Any) -> Any:
    return value if shared is None or not isinstance(value, dict | list) else shared.one(value)


def _meta(meta: dict[str, Any], shared: Shared | None) -> dict[str, Any]:
    kept = {key: meta[key] for key in META_KEPT if key in meta}
    kept.update((key, _text(meta[key])) for key in META_INTERNED if key in meta)
    if "deletionTimestamp" in meta:
        kept["deletionTimestamp"] = meta["deletionTimestamp"]
    labels = meta.get("labels")
    if shared is not None and isinstance(labels, dict):
        # Keyed by its pairs when all are strings (1, 1.0 and True would key alike).
        plain = all(type(v) is str for v in labels.values())
        kept["labels"] = shared.one(labels, ("labels", *labels.items()) if plain else None)
    elif "labels" in meta:
        kept["labels"] = labels
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        kept["annotations"] = _share(shared, annotations)
    elif "annotations" in meta:
        kept["annotations"] = annotations
    owners = meta.get("ownerReferences")
    if isinstance(owners, list):
        owners = [
            {k: o[k] for k in OWNER_KEPT if k in o} if isinstance(o, dict) else o for o in owners
        ]
        kept["ownerReferences"] = _share(shared, owners)
    elif "ownerReferences" in meta:
        kept["ownerReferences"] = owners
    return kept


def _reduced(
    kept: dict[str, Any], source: dict[str, Any], key: str, kind: type, reduce: Reduce
) -> None:
    """kept[key]: `reduce` of source[key] when it is a `kind` (None: left out), else as is.

    A value of another kind is copied untouched: the engine, not the cache, judges it.
    """
    value = source.get(key)
    if isinstance(value, kind):
        value = reduce(value)
        if value is not None:
            kept[key] = value
    elif key in source:
        kept[key] = value


def _visible_env(env: list[Any]) -> list[Any] | None:
    visible = [e for e in env if not isinstance(e, dict) or e.get("name") == VISIBLE_DEVICES]
    return visible or None


def _container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    kept = {key: container[key] for key in CONTAINER_KEPT if key in container}
    _reduced(kept, container, "env", list, _visible_env)
    return kept


def _spec(spec: dict[str, Any], shared: Shared | None) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    if "nodeName" in spec:
        kept["nodeName"] = _text(spec["nodeName"])
    for group in ("containers", "initContainers"):
        containers = spec.get(group)
        if isinstance(containers, list):
            kept[group] = _share(shared, [_container(c) for c in containers])
        elif group in spec:
            kept[group] = containers
    for key in ("overhead", "resourceClaims"):
        if key in spec:
            kept[key] = _share(shared, spec[key])
    return kept


def _told_state(state: dict[str, Any]) -> dict[str, Any] | None:
    # Only a waiting or terminated container is told apart (its reason); a running one
    # reads as one without a state.
    told = {k: state[k] for k in ("waiting", "terminated") if k in state}
    return told or None


def _container_status(status: Any) -> Any:
    if not isinstance(status, dict):
        return status
    kept = {key: status[key] for key in ("name", "restartCount") if key in status}
    _reduced(kept, status, "state", dict, _told_state)
    return kept


def _status(status: dict[str, Any], shared: Shared | None) -> dict[str, Any]:
    kept = {key: _text(status[key]) for key in STATUS_KEPT if key in status}
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        ready = [
            {k: c[k] for k in ("type", "status") if k in c}
            for c in conditions
            if isinstance(c, dict) and c.get("type") == "Ready"
        ]
        ready_key = ("ready", *(tuple(c.items()) for c in ready))
        kept["conditions"] = ready if shared is None else shared.one(ready, _hashable(ready_key))
    elif "conditions" in status:
        kept["conditions"] = conditions
    statuses = status.get("containerStatuses")
    if isinstance(statuses, list):
        reduced = [_container_status(s) for s in statuses]
        statuses_key = (
            "statuses",
            *(tuple(s.items()) if isinstance(s, dict) else ("not a dict", s) for s in reduced),
        )
        kept["containerStatuses"] = (
            reduced if shared is None else shared.one(reduced, _hashable(statuses_key))
        )
    elif "containerStatuses" in status:
        kept["containerStatuses"] = statuses
    for key in STATUS_WHOLE:
        if key in status:
            kept[key] = status[key]
    return kept


def _hashable(key: tuple[Any, ...]) -> object:
    """`key` if it can key a dict, else None (Shared.one then keys by repr).

    Such keys treat 1, 1.0 and True alike; they are used only where every reader does too
    (a condition's status is compared with "True", restart counts are summed as ints).
    """
    try:
        hash(key)
    except TypeError:
        return None
    return key


def slim_pod(manifest: Manifest, shared: Shared | None = None) -> Manifest:
    """The parts of `manifest` GPU Slots reads (a DaemonSet's pod: all of it).

    With `shared`, parts equal to those of pods slimmed before are that same object.
    """
    if is_daemon_pod(manifest):
        return manifest
    slim: Manifest = {}
    for key, build in (("metadata", _meta), ("spec", _spec), ("status", _status)):
        part = manifest.get(key)
        if isinstance(part, dict):
            slim[key] = build(part, shared)
        elif key in manifest:
            slim[key] = part
    return slim


def slim_node(manifest: Manifest) -> Manifest:
    """A node without what nothing reads and real nodes carry plenty of (in place).

    Nodes are read in many ways (labels, capacity, conditions, taints, node info), so only
    three known-unread parts go: `managedFields`, the last-applied annotation and
    `status.images` (every image the node pulled, often the bulk of a node's JSON).
    """
    meta = manifest.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    status = manifest.get("status")
    if isinstance(status, dict):
        status.pop("images", None)
    return manifest


class PodSlimmer:
    """slim_pod() with one `Shared` across every pod of a cache (its transform)."""

    def __init__(self) -> None:
        self.shared = Shared()

    def __call__(self, manifest: Manifest) -> Manifest:
        return slim_pod(manifest, self.shared)
