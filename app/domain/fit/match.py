"""The scheduler's node filters that are not about resources: taints, selectors, affinity.

As kube-scheduler's TaintToleration, NodeAffinity (nodeSelector and the required node
affinity) and NodeName plugins decide them; NodeUnschedulable and readiness are in
`check`, since the taints the control plane adds for them are worded there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.domain.fit.manifest import PodAsk, SelectorRequirement, Toleration
from app.domain.snapshot import NodeTaint

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def tolerates(tolerations: Iterable[Toleration], *, key: str, value: str, effect: str) -> bool:
    """Whether one of `tolerations` tolerates the taint (ToleratesTaint)."""
    for toleration in tolerations:
        if toleration.effect and toleration.effect != effect:
            continue
        if toleration.key and toleration.key != key:
            continue
        if toleration.operator == "Exists" or toleration.value == value:
            return True
    return False


def untolerated_taint(
    ask: PodAsk, taints: Iterable[NodeTaint], *, skip: frozenset[str] = frozenset()
) -> NodeTaint | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate (keys in `skip` aside).

    A taint keyed by a resource the pod requests counts as tolerated: the API server's
    ExtendedResourceToleration admission adds that toleration, as the engine assumes too
    (app.domain.accounting.schedulable).
    """
    for taint in taints:
        if taint.effect not in BLOCKING_EFFECTS or taint.key in skip or taint.key in ask.slots:
            continue
        if not tolerates(
            ask.tolerations, key=taint.key, value=taint.value or "", effect=taint.effect
        ):
            return taint
    return None


def selector_mismatch(ask: PodAsk, labels: Mapping[str, str]) -> tuple[str, str] | None:
    """The first nodeSelector entry the node's labels do not hold: (key, wanted value)."""
    for key, wanted in ask.node_selector.items():
        if labels.get(key) != wanted:
            return key, wanted
    return None


def affinity_holds(ask: PodAsk, *, node: str, labels: Mapping[str, str]) -> bool:
    """The required node affinity: any term whose expressions all hold (no terms: true)."""
    if not ask.affinity_terms:
        return True
    fields = {"metadata.name": node}
    for term in ask.affinity_terms:
        if not term.labels and not term.fields:
            continue  # an empty term matches no node
        if all(_holds(r, labels) for r in term.labels) and all(
            _holds(r, fields) for r in term.fields
        ):
            return True
    return False


def _holds(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = requirement.key in labels
    value = labels.get(requirement.key, "")
    operator = requirement.operator
    if operator == "In":
        return present and value in requirement.values
    if operator == "NotIn":
        return not present or value not in requirement.values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return present and _compare(value, requirement.values, greater=operator == "Gt")


def _compare(value: str, values: tuple[str, ...], *, greater: bool) -> bool:
    """Gt/Lt: one integer value each side; anything else matches nothing."""
    if len(values) != 1:
        return False
    try:
        have, bound = int(value), int(values[0])
    except ValueError:
        return False
    return have > bound if greater else have < bound
