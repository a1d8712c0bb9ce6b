"""The shared DaemonSet's node-affinity term that keeps it off split nodes. Pure.

A node with its own plugin DaemonSet carries the label `gpu-slots.io/plugin-daemonset`;
the shared DaemonSet gets, once, the term `DoesNotExist` on that label in every required
node-selector term, and an own DaemonSet (a copy of the shared one) drops it again.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from app.domain.changes.split_models import NODE_LABEL
from app.domain.cluster import Manifest

EXCLUDE = {"key": NODE_LABEL, "operator": "DoesNotExist"}


def exclude_split_nodes(shared: Manifest) -> Manifest | None:
    """The shared DaemonSet with the term that keeps it off split nodes (None: has it already)."""
    pod = (((shared.get("spec") or {}).get("template") or {}).get("spec")) or {}
    required = _required(pod)
    terms = (required or {}).get("nodeSelectorTerms") or []
    if terms and all(EXCLUDE in (t.get("matchExpressions") or []) for t in terms):
        return None
    new = copy.deepcopy(shared)
    new.pop("status", None)
    new_pod = new["spec"]["template"]["spec"]
    affinity = new_pod.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    req = affinity.setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
    )
    new_terms = req.setdefault("nodeSelectorTerms", [])
    if not new_terms:
        new_terms.append({"matchExpressions": []})
    for term in new_terms:
        expressions = term.setdefault("matchExpressions", [])
        if EXCLUDE not in expressions:
            expressions.append(dict(EXCLUDE))
    return new


def _required(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    affinity = (pod.get("affinity") or {}).get("nodeAffinity") or {}
    value = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return value if isinstance(value, Mapping) else None


def drop_exclusion(pod: Manifest) -> None:
    """An own DaemonSet copies the shared one: remove the term that would keep it off its node."""
    required = _required(pod)
    if required is None:
        return
    for term in required.get("nodeSelectorTerms") or []:
        expressions = [e for e in term.get("matchExpressions") or [] if e != EXCLUDE]
        if expressions:
            term["matchExpressions"] = expressions
        else:
            term.pop("matchExpressions", None)
    terms = [t for t in required.get("nodeSelectorTerms") or [] if t]
    if not terms:
        node_affinity = pod["affinity"]["nodeAffinity"]
        node_affinity.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
        if not node_affinity:
            pod["affinity"].pop("nodeAffinity")
        if not pod["affinity"]:
            pod.pop("affinity")
