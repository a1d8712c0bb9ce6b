"""Every node's facts, findings and state, reusing the memo's entry of an unchanged node."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from app.domain.accounting.facts import ClusterFacts, NodeFacts, NodeInputs, ages_clock, fresh_from
from app.domain.accounting.nodes import build_node_facts, node_name
from app.domain.accounting.pod_index import PodIndex
from app.domain.accounting.states import build_node_state
from app.domain.cluster import Manifest
from app.domain.dra.inventory import DraView
from app.domain.dra.ledger import apply_dra, claimed_gpus, dra_node_state
from app.domain.engine.memo import (
    EngineMemo,
    NodeEntry,
    context_key,
    node_key,
    pod_refs,
    same_objects,
)
from app.domain.findings.catalogue import sort_key
from app.domain.findings.dra_node import dra_node_findings
from app.domain.findings.gpu import gpu_findings
from app.domain.findings.health import health_findings
from app.domain.findings.node import node_findings
from app.domain.findings.stale_ids import stale_id_findings
from app.domain.plugin.daemonset import PluginSpec
from app.domain.snapshot import Finding, NodeState


@dataclass
class _Built:
    """The nodes' facts in name order, the memo entries to keep, the names reused."""

    nodes: list[NodeFacts] = field(default_factory=list)
    entries: dict[str, NodeEntry] = field(default_factory=dict)
    reused: set[str] = field(default_factory=set)


def all_node_facts(
    inputs: NodeInputs, index: PodIndex, memo: EngineMemo | None, dra: DraView | None
) -> tuple[list[NodeFacts], dict[str, NodeEntry], set[str]]:
    """Every node's facts, reusing the memo's entry of a node whose inputs did not change."""
    named = _named(inputs.state.nodes, memo)
    context = _context(inputs, memo, dra, unique=len({n for n, _ in named}) == len(named))
    previous = memo.nodes if memo is not None else {}
    built = _Built()
    clock = ages_clock(inputs.ages_at)  # all the memo reads of time are agents' ages
    fresh = fresh_from(inputs.ages_at, inputs.options.agent_stale_after_s)
    for name, manifest in named:
        old = previous.get(name)
        key = _node_key(inputs, index, name, manifest, context, fresh=fresh, old=old)
        if key is None:
            old = None
        if old is not None and _reuse(old, inputs, index, name, key, clock=clock):
            built.entries[name] = old
            built.reused.add(name)
            built.nodes.append(old.facts)
            continue
        node_facts = _fresh_node(inputs, index, name, manifest, dra)
        if key is not None:
            read = (context, manifest, index.plugin_by_node.get(name))
            built.entries[name] = _entry(inputs, index, name, key, node_facts, read=read)
        built.nodes.append(node_facts)
    if memo is not None:
        memo.nodes = built.entries
        memo.reused = len(built.reused)
        memo.context = context
    return built.nodes, built.entries, built.reused


def _named(nodes: Sequence[Manifest], memo: EngineMemo | None) -> list[tuple[str, Manifest]]:
    """The nodes by name, in name order; the memo's while the list holds the very same
    nodes (reading 10,000 names, each in its own cold manifest, was a twentieth of a build)."""
    if memo is not None and same_objects(memo.node_list, nodes):
        return memo.named
    named = sorted(((node_name(n), n) for n in nodes), key=_first)
    if memo is not None:
        memo.node_list, memo.named = list(nodes), named
    return named


def _context(
    inputs: NodeInputs, memo: EngineMemo | None, dra: DraView | None, *, unique: bool
) -> Hashable | None:
    """What every node reads besides itself, when nodes can be reused; else None."""
    if memo is None or not unique:  # two nodes of one name: nothing to key them by
        return None
    context = context_key(inputs.state, inputs.options)
    if context is not None and dra is not None:
        context = (context, dra.version)  # any DRA change recomputes every node
    if context is not None and context == memo.context:
        context = memo.context  # the same object: each node's key compares at once
    return context


def _node_key(
    inputs: NodeInputs,
    index: PodIndex,
    name: str,
    manifest: Manifest,
    context: Hashable | None,
    *,
    fresh: datetime,
    old: NodeEntry | None,
) -> Hashable | None:
    """The node's memo key; None when it cannot be reused (no context, or a stale agent).

    `fresh` is `fresh_from(inputs.ages_at, ...)`, reckoned once per build; `old` is the
    memo's entry, whose key holds while the node and plugin pod are the very objects it
    read (at 10,000 nodes reading their versions again was a tenth of a build)."""
    if context is None:
        return None
    received = inputs.state.reports.get(name)
    # a stale agent's age is in its finding: such a node is recomputed every time
    if received is not None and received.received_at < fresh:
        return None
    plugin_pod = index.plugin_by_node.get(name)
    if old is not None and old.read_same(context, manifest, plugin_pod):
        return old.key
    return node_key(manifest, plugin_pod, context)


def _reuse(
    old: NodeEntry,
    inputs: NodeInputs,
    index: PodIndex,
    name: str,
    key: Hashable,
    *,
    clock: datetime,
) -> bool:
    """Whether the memo's entry still holds; if so its agent's age is brought up to now."""
    received = inputs.state.reports.get(name)
    if not old.reusable(key, received, index.pods_by_node.get(name, []), index):
        return False
    old.renew(clock, inputs.options.agent_stale_after_s, received)
    return True


def _fresh_node(
    inputs: NodeInputs, index: PodIndex, name: str, manifest: Manifest, dra: DraView | None
) -> NodeFacts:
    """The node's facts computed anew, with its DRA devices and claims joined in."""
    node_facts = build_node_facts(
        manifest,
        inputs,
        pods=index.pods_by_node.get(name, []),
        plugin_pod=index.plugin_by_node.get(name),
        spec=_owner(index, manifest),
    )
    apply_dra(dra, node_facts)
    return node_facts


def _entry(
    inputs: NodeInputs,
    index: PodIndex,
    name: str,
    key: Hashable,
    node_facts: NodeFacts,
    *,
    read: tuple[Hashable, Manifest, Manifest | None],
) -> NodeEntry:
    received = inputs.state.reports.get(name)
    return NodeEntry(
        key,
        read,
        received,
        index.pods_by_node.get(name, []),
        pod_refs(received, index.facts_by_uid),
        node_facts,
        ages_at=ages_clock(inputs.ages_at),
    )


def _first(pair: tuple[str, Manifest]) -> str:
    return pair[0]


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


def node_results(
    facts: ClusterFacts, entries: Mapping[str, NodeEntry], reused: set[str], dra: DraView | None
) -> tuple[list[Finding], list[NodeState]]:
    """Every node's own findings (node + GPU, in node order) and its state."""
    findings: list[Finding] = []
    node_states = []
    for node_facts in facts.nodes:
        own, node_state = _node_result(facts, node_facts, entries, reused, dra)
        node_states.append(node_state)
        findings.extend(own)
    return findings, node_states


def _node_result(
    facts: ClusterFacts,
    node_facts: NodeFacts,
    entries: Mapping[str, NodeEntry],
    reused: set[str],
    dra: DraView | None,
) -> tuple[list[Finding], NodeState]:
    """A node's own findings (node + GPU) and state, from the memo when it was reused."""
    entry = entries.get(node_facts.name)
    if entry is not None and node_facts.name in reused and entry.state is not None:
        return entry.findings, entry.state
    claimed = claimed_gpus(dra, node_facts)
    own = node_findings(facts, node_facts) + gpu_findings(facts, node_facts, claimed=claimed)
    own += health_findings(node_facts)
    own += stale_id_findings(node_facts)
    own = dra_node_findings(dra, facts, node_facts, own)
    own.sort(key=sort_key)
    node_state = dra_node_state(dra, node_facts, build_node_state(node_facts, own))
    if entry is not None:
        entry.findings, entry.state = own, node_state
    return own, node_state


def with_pod_findings(node_states: list[NodeState], findings: list[Finding]) -> list[NodeState]:
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
