"""Undoing the writes of a split that failed part way. Pure.

`landed` judges, from the object as re-read, whether one write of the plan is in the
cluster (its answer may have been lost: a timeout or a 5xx does not say it failed).
`inverse` gives the write that takes a landed write back, made from the object as it is
now (its resourceVersion, its uid) so that a change by someone else in between is a 409
and is never overwritten.
"""

from __future__ import annotations

import copy
from typing import Any

from app.domain.changes.split_models import SPLIT_ANNOTATION, ObjectWrite
from app.domain.cluster import Manifest

_SERVER_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


def landed(write: ObjectWrite, current: Manifest | None) -> bool:
    """Whether the object as re-read carries `write`."""
    if write.kind == "Node":
        wanted = (write.after or {}).get("labels") or {}
        labels = _labels(current)
        return current is not None and all(labels.get(k) == v for k, v in wanted.items())
    if write.action == "delete":
        return current is None
    if current is None or write.after is None:
        return False
    if write.kind == "ConfigMap":
        return bool((current.get("data") or {}) == (write.after.get("data") or {}))
    return _daemonset_key(current) == _daemonset_key(write.after)


def unchanged(write: ObjectWrite, current: Manifest | None) -> bool:
    """Whether the object as re-read is still as the plan found it (the write did not land)."""
    if write.before is None:
        return current is None
    if current is None:
        return False
    if write.kind == "Node":
        wanted = (write.after or {}).get("labels") or {}
        before, now = _labels(write.before), _labels(current)
        return all(before.get(k) == now.get(k) for k in wanted)
    if write.kind == "ConfigMap":
        return bool((current.get("data") or {}) == (write.before.get("data") or {}))
    return _daemonset_key(current) == _daemonset_key(write.before)


def inverse(write: ObjectWrite, current: Manifest | None) -> ObjectWrite:
    """The write that takes `write` back, given the object as it is now (after `write`)."""
    if write.kind == "Node":
        keys = ((write.after or {}).get("labels") or {}).keys()
        old = _labels(write.before)
        return ObjectWrite(
            "label", "Node", write.name, current, {"labels": {k: old.get(k) for k in keys}}
        )
    if write.action == "create":
        return ObjectWrite("delete", write.kind, write.name, current, None)
    body = copy.deepcopy(write.before) or {}
    body.pop("status", None)
    meta = body.setdefault("metadata", {})
    for key in _SERVER_META:
        meta.pop(key, None)
    if write.action == "delete":
        return ObjectWrite("create", write.kind, write.name, None, body)
    version = ((current or {}).get("metadata") or {}).get("resourceVersion")
    if version is not None:
        meta["resourceVersion"] = version
    return ObjectWrite("replace", write.kind, write.name, current, body)


def _labels(obj: Manifest | None) -> dict[str, Any]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _daemonset_key(ds: Manifest) -> tuple[Any, ...]:
    """What a split write changes in a DaemonSet (server defaults leave it alone)."""
    annotations = (ds.get("metadata") or {}).get("annotations") or {}
    pod = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    env = [
        (e.get("name"), e.get("value"))
        for c in pod.get("containers") or []
        for e in c.get("env") or []
    ]
    return (
        annotations.get(SPLIT_ANNOTATION),
        pod.get("affinity") or None,
        pod.get("nodeSelector") or None,
        sorted(env, key=str),
    )
