"""The accounting engine: one cluster view plus agent reports -> the snapshot the pages show.

Pure: no I/O, no clock (`now` is an argument). Linear in nodes + pods: pods are indexed by
node and by UID once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TypeVar

from app.domain.accounting.demand import NodeOffer, is_pending_demand, pending_demand
from app.domain.accounting.facts import (
    ClusterFacts,
    EngineMemo,
    NodeEntry,
    NodeFacts,
    PodFindingsMemo,
    agent_age,
    ages_clock,
    context_key,
    node_key,
    pod_refs,
)
from app.domain.accounting.ledger import sum_resources
from app.domain.accounting.nodes import NodeInputs, build_node_facts, node_name, readable
from app.domain.accounting.pod_index import PodIndex, PodIndexMemo, index_pods
from app.domain.accounting.pods import PodFacts, read_pod
from app.domain.accounting.states import (
    build_node_state,
    cluster_mode,
    plugin_state,
    totals_of,
)
from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.dra.install import read_dra_install
from app.domain.dra.inventory import DraView, read_dra
from app.domain.dra.ledger import apply_dra, dra_node_state, dra_summary
from app.domain.dra_models import DraInstall
from app.domain.findings.catalogue import CATALOGUE, sort_key
from app.domain.findings.cluster import cluster_findings
from app.domain.findings.dra_cluster import dra_cluster_findings
from app.domain.findings.dra_node import dra_node_findings
from app.domain.findings.gpu import gpu_findings
from app.domain.findings.node import node_findings
from app.domain.findings.pods import pod_findings, pod_findings_by_uid
from app.domain.findings.resources import demand_findings
from app.domain.plugin.daemonset import (
    PluginSpec,
    is_plugin_daemonset,
    read_plugin_spec,
)
from app.domain.plugin.effective import resolve_config
from app.domain.snapshot import (
    Finding,
    NodeState,
    PendingDemand,
    Snapshot,
)

T = TypeVar("T")


def build_snapshot(
    state: ClusterState,
    *,
    options: AccountingOptions,
    now: datetime,
    memo: EngineMemo | None = None,
) -> Snapshot:
    """Compute every figure and finding of the dashboard from one consistent cluster view.

    `memo` (kept by the caller from one snapshot to the next) saves re-reading pods and
    recomputing nodes that did not change (see EngineMemo); the result is the same with or
    without it.
    """
    index = _index_pods(state, plugin_specs(state), memo)
    specs = index.specs  # the index's own objects: a node's owner is one of them
    spec = specs[0] if specs else None
    default_config = resolve_config(spec, state.configmaps, readable=readable(options))
    dra = read_dra(state.device_classes, state.resource_slices, state.resource_claims)
    inputs = NodeInputs(
        spec=spec,
        default_config=default_config,
        state=state,
        options=options,
        now=now,
        slots_by_uid=index.slots_by_uid,
        pods_by_uid=index.pods_by_uid,
    )
    nodes, entries, reused = _all_node_facts(inputs, index, memo, dra)
    facts = ClusterFacts(
        state=state,
        options=options,
        now=now,
        spec=spec,
        default_config=default_config,
        nodes=nodes,
        pods_by_uid=index.pods_by_uid,
        slots_by_uid=index.slots_by_uid,
        plugin_pods=index.plugin_pods,
        pod_facts=index.facts_by_uid,
    )
    findings = list(cluster_findings(facts)) + _pod_findings(facts, index, memo)
    findings += dra_cluster_findings(dra, facts)
    node_states = []
    for node_facts in nodes:
        own, node_state = _node_result(facts, node_facts, entries, reused, dra)
        node_states.append(node_state)
        findings.extend(own)
    demand = _demand(facts, index, memo)
    findings += demand_findings(demand)
    node_states = _with_pod_findings(node_states, findings)
    findings.sort(key=sort_key)
    plugin = plugin_state(spec, default_config, options)
    return Snapshot(
        generated_at=now,
        plugin=plugin,
        totals=totals_of(node_states, demand),
        nodes=node_states,
        findings=findings,
        dra=dra_summary(dra, state.nodes, install=_dra_install(state, specs)),
        mode=cluster_mode(nodes, default=plugin.mode),
        resources=sum_resources([n.resources for n in nodes]),
        pending_demand=demand,
    )


def _dra_install(state: ClusterState, specs: list[PluginSpec]) -> DraInstall | None:
    return read_dra_install(state.daemonsets, state.device_classes, device_plugin=bool(specs))


def plugin_specs(state: ClusterState) -> list[PluginSpec]:
    """Every plugin DaemonSet, the configured one first (or the first found without it)."""
    specs = [read_plugin_spec(state.daemonset)] if state.daemonset is not None else []
    seen = {s.ref for s in specs}
    for daemonset in state.daemonsets:
        if not is_plugin_daemonset(daemonset):
            continue
        found = read_plugin_spec(daemonset)
        if found.ref not in seen:
            seen.add(found.ref)
            specs.append(found)
    return specs


def _index_pods(state: ClusterState, specs: list[PluginSpec], memo: EngineMemo | None) -> PodIndex:
    if memo is None:
        return index_pods(state.pods, specs, [read_pod(p) for p in state.pods])
    if memo.pod_index is None:
        memo.pod_index = PodIndexMemo(memo.pods)
    return memo.pod_index.index(state.pods, specs)


def _owner(index: PodIndex, node: Manifest) -> PluginSpec | None:
    """The DaemonSet whose pod runs on the node, else the one whose nodeSelector fits it."""
    found = index.owner_by_node.get(node_name(node))
    if found is not None or len(index.specs) < 2:
        return found
    labels = (node.get("metadata") or {}).get("labels") or {}
    for spec in index.specs:
        if spec.node_selector and all(labels.get(k) == v for k, v in spec.node_selector.items()):
            return spec
    return None


def _all_node_facts(
    inputs: NodeInputs, index: PodIndex, memo: EngineMemo | None, dra: DraView | None
) -> tuple[list[NodeFacts], dict[str, NodeEntry], set[str]]:
    """Every node's facts, reusing the memo's entry of a node whose inputs did not change."""
    state, options = inputs.state, inputs.options
    now = ages_clock(inputs.now)  # all this function reads of time are agents' ages
    named = sorted(((node_name(n), n) for n in state.nodes), key=_first)
    context = context_key(state, options) if memo is not None else None
    if len({name for name, _ in named}) != len(named):
        context = None  # two nodes of one name: nothing to key them by
    if context is not None and dra is not None:
        context = (context, dra.version)  # any DRA change recomputes every node
    if memo is not None and context is not None and context == memo.context:
        context = memo.context  # the same object: each node's key compares at once
    previous = memo.nodes if memo is not None else {}
    entries: dict[str, NodeEntry] = {}
    reused: set[str] = set()
    nodes: list[NodeFacts] = []
    for name, manifest in named:
        pods = index.pods_by_node.get(name, [])
        plugin_pod = index.plugin_by_node.get(name)
        received = state.reports.get(name)
        key = None
        if context is not None:
            # a stale agent's age is in its finding: such a node is recomputed every time
            stale = received is not None and agent_age(received, now) > options.agent_stale_after_s
            key = None if stale else node_key(manifest, plugin_pod, context)
        old = previous.get(name) if key is not None else None
        if old is not None and old.reusable(key, received, pods, index):
            old.renew(now, options.agent_stale_after_s)
            entries[name] = old
            reused.add(name)
            nodes.append(old.facts)
            continue
        node_facts = build_node_facts(
            manifest, inputs, pods=pods, plugin_pod=plugin_pod, spec=_owner(index, manifest)
        )
        apply_dra(dra, node_facts)
        if key is not None:
            entries[name] = NodeEntry(
                key,
                received,
                pods,
                pod_refs(received, index.facts_by_uid),
                node_facts,
                ages_at=ages_clock(now),
            )
        nodes.append(node_facts)
    if memo is not None:
        memo.nodes = entries
        memo.reused = len(reused)
        memo.context = context
    return nodes, entries, reused


def _first(pair: tuple[str, Manifest]) -> str:
    return pair[0]


def _node_result(
    facts: ClusterFacts,
    node_facts: NodeFacts,
    entries: Mapping[str, NodeEntry],
    reused: set[str],
    dra: DraView | None = None,
) -> tuple[list[Finding], NodeState]:
    """A node's own findings (node + GPU) and state, from the memo when it was reused."""
    entry = entries.get(node_facts.name)
    if entry is not None and node_facts.name in reused and entry.state is not None:
        return entry.findings, entry.state
    own = node_findings(facts, node_facts) + gpu_findings(facts, node_facts)
    own = dra_node_findings(dra, facts, node_facts, own)
    own.sort(key=sort_key)
    node_state = dra_node_state(dra, node_facts, build_node_state(node_facts, own))
    if entry is not None:
        entry.findings, entry.state = own, node_state
    return own, node_state


def _pod_findings(facts: ClusterFacts, index: PodIndex, memo: EngineMemo | None) -> list[Finding]:
    """pod_findings(facts), recomputed for the pods that changed only, when that is enough.

    A pod's findings read the pod, the config of its node (or the default one) and whether
    it is one of the plugin's pods: while configs and plugin pods are the same, only the
    pods the index says changed are looked at again.
    """
    if memo is None:
        return pod_findings(facts)
    configs = {n.name: n.config.config for n in facts.nodes}
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
    by_uid = _per_pod(
        kept.by_uid if kept is not None else None,
        index,
        lambda uids: pod_findings_by_uid(facts, uids),
    )
    found = [item for items in by_uid.values() for item in items]
    memo.pod_findings = PodFindingsMemo(facts.plugin_pods, configs, default, by_uid, found)
    return found


def _with_pod_findings(node_states: list[NodeState], findings: list[Finding]) -> list[NodeState]:
    """Node states with the pod-scoped findings of their pods merged into their own."""
    by_node: dict[str, list[Finding]] = {}
    for item in findings:
        if item.node is not None and item.scope.value == "pod":
            by_node.setdefault(item.node, []).append(item)
    if not by_node:
        return node_states
    return [
        n.model_copy(update={"findings": sorted([*n.findings, *by_node[n.name]], key=sort_key)})
        if n.name in by_node
        else n
        for n in node_states
    ]


def _demand(facts: ClusterFacts, index: PodIndex, memo: EngineMemo | None) -> list[PendingDemand]:
    pending = _pending_pods(facts, index, memo)
    if not pending:
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
    return pending_demand(pending, offers, now=facts.now)


def _pending_pods(facts: ClusterFacts, index: PodIndex, memo: EngineMemo | None) -> list[PodFacts]:
    """The pods waiting for GPU resources; only the pods that changed are looked at again."""
    pending = _per_pod(
        memo.pending if memo is not None else None,
        index,
        lambda uids: {
            uid: pod
            for uid in uids
            if (pod := facts.pod_facts.get(uid)) is not None and is_pending_demand(pod)
        },
    )
    if memo is not None:
        memo.pending = pending
    return list(pending.values())


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


__all__ = ["CATALOGUE", "build_snapshot"]
