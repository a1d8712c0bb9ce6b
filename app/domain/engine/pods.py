"""The pod findings, the pending pods and their demand, redone only for the pods that changed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import TypeVar

from app.domain.accounting.demand import NodeOffer, is_pending_demand, pending_demand
from app.domain.accounting.facts import ClusterFacts
from app.domain.accounting.pod_index import PodIndex
from app.domain.engine.memo import EngineMemo, PendingPods, PodFindingsMemo
from app.domain.findings.pods import (
    plugin_pod_uids,
    pod_findings,
    pod_findings_by_uid,
)
from app.domain.plugin.config import PluginConfig
from app.domain.snapshot import Finding, PendingDemand
from app.domain.usage.holders import pending_pod

T = TypeVar("T")


def cluster_pod_findings(
    facts: ClusterFacts,
    index: PodIndex,
    memo: EngineMemo | None,
    *,
    configs: Mapping[str, PluginConfig | None],
) -> list[Finding]:
    """pod_findings(facts), recomputed for the pods that changed only, when that is enough.

    A pod's findings read the pod, the config of its node (or the default one) and whether
    it is one of the plugin's pods: while configs and plugin pods are the same, only the
    pods the index says changed are looked at again.
    """
    if memo is None:
        return pod_findings(facts, configs=configs)
    default = facts.default_config.config
    kept = memo.pod_findings
    if kept is not None and (
        kept.plugin_pods is not facts.plugin_pods
        or kept.default != default
        or kept.configs != configs
    ):
        kept = None  # what every pod's findings read changed: all of them again
    if kept is not None and index.changed == frozenset():
        return kept.findings
    plugin_uids = kept.plugin_uids if kept is not None else plugin_pod_uids(facts.plugin_pods)
    by_uid = _per_pod(
        kept.by_uid if kept is not None else None,
        index,
        lambda uids: pod_findings_by_uid(facts, uids, configs=configs, plugin_uids=plugin_uids),
    )
    found = [item for items in by_uid.values() for item in items]
    memo.pod_findings = PodFindingsMemo(
        facts.plugin_pods, plugin_uids, configs, default, by_uid, found
    )
    return found


def pending_pods(facts: ClusterFacts, index: PodIndex, memo: EngineMemo | None) -> PendingPods:
    """The pods waiting for GPU resources, each with its owner; only the pods that changed
    are looked at again, and the list is sorted again only when one did."""
    kept = memo.pending if memo is not None else None
    by_uid = _per_pod(
        kept.by_uid if kept is not None else None,
        index,
        lambda uids: {
            uid: pending_pod(pod, facts.pods_by_uid[uid])
            for uid in uids
            if (pod := facts.pod_facts.get(uid)) is not None and is_pending_demand(pod)
        },
    )
    if kept is not None and by_uid is kept.by_uid:
        return kept
    found = PendingPods(by_uid, sorted(by_uid.values(), key=attrgetter("pod")))
    if memo is not None:
        memo.pending = found
    return found


def demand_of(facts: ClusterFacts, pending: PendingPods) -> list[PendingDemand]:
    """The GPU resources pending pods wait for, next to what every node offers."""
    if not pending.by_uid:
        return []
    offers = [
        NodeOffer(
            resources=n.resources,
            refuses_above_one=frozenset(
                name
                for name in n.resources
                if n.config.config is not None
                and n.config.config.fail_requests_greater_than_one
                and name == n.resource
            ),
        )
        for n in facts.nodes
    ]
    pods = [facts.pod_facts[uid] for uid in pending.by_uid]
    return pending_demand(pods, offers, now=facts.now)


def _per_pod(
    kept: dict[str, T] | None, index: PodIndex, find: Callable[[Iterable[str]], dict[str, T]]
) -> dict[str, T]:
    """A by-UID result of the pods (`find` of some UIDs: those it has something for), from
    `kept` (the latest one, None when unusable) redone for the pods the index says changed.
    """
    if kept is None or index.changed is None:
        return find(index.facts_by_uid)
    if not index.changed:
        return kept
    found = {uid: value for uid, value in kept.items() if uid not in index.changed}
    found.update(find(index.changed))
    return found
