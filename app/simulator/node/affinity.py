"""Required node affinity as the scheduler reads it (what a DaemonSet's pods may run on).

`requiredDuringSchedulingIgnoredDuringExecution`: the node must match at least one
term; a term matches when every matchExpression does (In, NotIn, Exists,
DoesNotExist, Gt, Lt on labels). matchFields (metadata.name) is honoured too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _expression(expr: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key = str(expr.get("key", ""))
    op = expr.get("operator")
    wanted = [str(v) for v in expr.get("values") or []]
    present = key in values
    value = values.get(key)
    if op == "In":
        return present and value in wanted
    if op == "NotIn":
        return not present or value not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and wanted:
        try:
            have, limit = int(str(value)), int(wanted[0])
        except ValueError:
            return False
        return have > limit if op == "Gt" else have < limit
    return False


def _term(term: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    return all(_expression(e, labels) for e in expressions) and all(
        _expression(f, {"metadata.name": node_name}) for f in fields
    )


def affinity_allows(pod_spec: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    """True when the pod's required node affinity lets it run on this node."""
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(_term(t, labels, node_name) for t in terms)
