"""Every node's facts, findings and state, reusing the memo's entry of an unchanged node.

Two ways, with one result (tests/domain/test_engine_delta.py): a build that reckons
agents' ages anew, or follows a change of what every node reads (the plugin DaemonSet, its
ConfigMaps, the node list, DRA), or the first one, asks every node whether its entry still
holds; a build for a few changes (the same nodes, context and ages; the pod index updated,
not rebuilt) looks only at the nodes a change touches: those whose manifest, holding pods,
agent report or process pods changed, and those without an entry (a stale agent's). At
10,000 nodes asking every node was most of a build for one pod or one report.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from app.domain.accounting.facts import NodeFacts, NodeInputs, ages_clock, fresh_from
from app.domain.accounting.nodes import build_node_facts, node_name
from app.domain.accounting.pod_index import PodIndex
from app.domain.cluster import Manifest
from app.domain.dra.inventory import DraView
from app.domain.dra.ledger import apply_dra
from app.domain.engine.memo import (
    EngineMemo,
    NodeEntry,
    NodeLayout,
    context_key,
    node_key,
    pod_refs,
)
from app.domain.plugin.config import PluginConfig
from app.domain.plugin.daemonset import PluginSpec
from app.domain.sequences import replaced_in_place
from app.domain.snapshot import Finding, NodeState

MAX_REPLACED = 200  # more node manifests replaced than this: the node list is read again


@dataclass
class NodeBuild:
    """Every node's facts in name order, and their results as far as they are known."""

    nodes: list[NodeFacts]
    states: list[NodeState | None]  # the kept ones; None at the positions in `todo`
    own: list[list[Finding]]  # each node's own findings (node + GPU), sorted
    configs: dict[str, PluginConfig | None]  # each node's plugin config, by name
    entries: dict[str, NodeEntry]  # the memo's, from now on
    todo: list[int] = field(default_factory=list)  # positions whose results are worked out
    unkeyed: set[str] = field(default_factory=set)  # nodes never kept (no memo key)
    delta: bool = False  # only the nodes a change touched were looked at

    def put(
        self, position: int, node_facts: NodeFacts, entry: NodeEntry | None, *, reused: bool
    ) -> None:
        """A node's facts at `position` (one past the end: appended), with its entry's
        results if the entry was reused, else to be worked out (`todo`)."""
        state, own = (entry.state, entry.findings) if reused and entry else (None, [])
        if position == len(self.nodes):
            self.nodes.append(node_facts)
            self.states.append(state)
            self.own.append(own)
        else:
            self.nodes[position], self.states[position], self.own[position] = (
                node_facts,
                state,
                own,
            )
        name = node_facts.name
        self.configs[name] = node_facts.config.config
        if state is None:
            self.todo.append(position)
        if entry is None:
            self.unkeyed.add(name)
            self.entries.pop(name, None)
        else:
            self.entries[name] = entry


@dataclass(frozen=True)
class _Visit:
    """What a node's results read, reckoned once per build."""

    inputs: NodeInputs
    index: PodIndex
    dra: DraView | None
    context: Hashable | None
    fresh: datetime  # fresh_from(ages_at): a report received before is a stale agent's
    clock: datetime  # ages_clock(ages_at)


def all_node_facts(
    inputs: NodeInputs, index: PodIndex, memo: EngineMemo | None, dra: DraView | None
) -> NodeBuild:
    """Every node's facts, reusing the memo's entry of a node whose inputs did not change."""
    named, replaced = _named(inputs.state.nodes, memo)
    context = _context(inputs, memo, dra)
    clock = ages_clock(inputs.ages_at)  # all the memo reads of time are agents' ages
    fresh = fresh_from(inputs.ages_at, inputs.options.agent_stale_after_s)
    visit = _Visit(inputs, index, dra, context, fresh, clock)
    layout = memo.layout if memo is not None else None
    if (
        memo is not None
        and layout is not None
        and context is not None
        and context is memo.context
        and replaced is not None
        and layout.clock == clock
        and index.touched is not None
        and index.changed is not None
    ):
        built = _touched_nodes(visit, memo, layout, _touched(visit, memo, layout, replaced))
        memo.delta_builds += 1
    else:
        built = _every_node(visit, memo, named)
    if memo is not None:
        memo.context = context
        memo.reused = len(built.nodes) - len(built.todo)
    return built


def _every_node(
    visit: _Visit, memo: EngineMemo | None, named: Sequence[tuple[str, Manifest]]
) -> NodeBuild:
    """Every node asked whether its memo entry holds."""
    previous = memo.nodes if memo is not None else {}
    built = NodeBuild([], [], [], {}, {})
    for position, (name, manifest) in enumerate(named):
        old = previous.get(name)
        node_facts, entry, reused = _visit(visit, old, name, manifest)
        built.put(position, node_facts, entry, reused=reused)
        if memo is not None and entry is not old:
            _track(memo.process_nodes, name, old, entry)
    if memo is not None:
        for gone in previous.keys() - built.configs.keys():  # nodes the list no longer has
            _track(memo.process_nodes, gone, previous[gone], None)
        memo.nodes = built.entries
    return built


def _touched_nodes(
    visit: _Visit, memo: EngineMemo, layout: NodeLayout, touched: set[str]
) -> NodeBuild:
    """The latest build's nodes, those `touched` asked again whether their entry holds."""
    built = NodeBuild(
        list(layout.nodes),
        list(layout.states),
        list(layout.own),
        dict(layout.configs),
        memo.nodes,  # updated in place: a failed build drops the memo
        delta=True,
    )
    for name in touched:
        position = memo.position.get(name)
        if position is None:
            continue  # not a node: pods or a report of a node the cluster does not list
        old = built.entries.get(name)
        node_facts, entry, reused = _visit(visit, old, name, memo.named[position][1])
        built.put(position, node_facts, entry, reused=reused)
        if entry is not old:
            _track(memo.process_nodes, name, old, entry)
    return built


def _touched(visit: _Visit, memo: EngineMemo, layout: NodeLayout, replaced: set[str]) -> set[str]:
    """The nodes whose inputs may have changed since the latest build (see the notes)."""
    index = visit.index
    assert index.touched is not None and index.changed is not None
    touched = replaced | index.touched | layout.unkeyed
    for uid in index.changed:
        touched.update(memo.process_nodes.get(uid, ()))
    reports, kept = visit.inputs.state.reports, layout.reports
    touched.update([name for name, received in reports.items() if kept.get(name) is not received])
    touched.update(kept.keys() - reports.keys())
    return touched


def _visit(
    visit: _Visit, old: NodeEntry | None, name: str, manifest: Manifest
) -> tuple[NodeFacts, NodeEntry | None, bool]:
    """The node's facts, its memo entry (None: not kept) and whether the entry was reused."""
    key = _node_key(visit, name, manifest, old=old)
    if key is None:
        old = None
    if old is not None and _reuse(old, visit, name, key):
        return old.facts, old, True
    node_facts = _fresh_node(visit, name, manifest)
    if key is None:
        return node_facts, None, False
    read = (visit.context, manifest, visit.index.plugin_by_node.get(name))
    return node_facts, _entry(visit, name, key, node_facts, read=read), False


def _track(
    process_nodes: dict[str, tuple[str, ...]],
    name: str,
    old: NodeEntry | None,
    new: NodeEntry | None,
) -> None:
    """Keep `process_nodes` (pod UID -> the nodes whose GPU processes name it: one but for
    a forged report, hence tuples, a fifth of a set's memory) for a node whose entry `old`
    became `new`."""
    for uid in old.process_uids if old is not None else ():
        names = tuple(n for n in process_nodes.get(uid, ()) if n != name)
        if names:
            process_nodes[uid] = names
        else:
            process_nodes.pop(uid, None)
    for uid in new.process_uids if new is not None else ():
        names = process_nodes.get(uid, ())
        if name not in names:
            process_nodes[uid] = (*names, name)


def _named(
    nodes: Sequence[Manifest], memo: EngineMemo | None
) -> tuple[list[tuple[str, Manifest]], set[str] | None]:
    """The nodes by name, in name order, and the names of those whose manifest the cache
    replaced in place since the memo's list (None: the list was read again).

    The memo's while the list holds the very same nodes (reading 10,000 names, each in its
    own cold manifest, was a twentieth of a build), with the few replaced ones put where
    they were."""
    if memo is None:
        return sorted(((node_name(n), n) for n in nodes), key=_first), None
    replaced = _replaced(memo.node_list, nodes, unique=memo.unique)
    if replaced is None:
        named = sorted(((node_name(n), n) for n in nodes), key=_first)
        memo.unique = len({name for name, _ in named}) == len(named)
        memo.position = {name: i for i, (name, _) in enumerate(named)} if memo.unique else {}
    elif replaced:
        named = list(memo.named)
        for name, manifest in replaced.items():
            named[memo.position[name]] = (name, manifest)
    else:
        return memo.named, set()
    memo.node_list, memo.named = list(nodes), named
    return named, None if replaced is None else set(replaced)


def _replaced(
    old: Sequence[Manifest], new: Sequence[Manifest], *, unique: bool
) -> dict[str, Manifest] | None:
    """The manifests `new` holds in place of `old`'s, by name, when that is all that changed
    (each keeps its name, names are unique, at most MAX_REPLACED); else None."""
    changed = replaced_in_place(old, new, key=node_name)
    if changed == []:
        return {}
    if not unique or changed is None or len(changed) > MAX_REPLACED:
        return None
    return {node_name(new[i]): new[i] for i in changed}


def _context(inputs: NodeInputs, memo: EngineMemo | None, dra: DraView | None) -> Hashable | None:
    """What every node reads besides itself, when nodes can be reused; else None."""
    if memo is None or not memo.unique:  # two nodes of one name: nothing to key them by
        return None
    context = context_key(inputs.state, inputs.options)
    if context is not None and dra is not None:
        context = (context, dra.version)  # any DRA change recomputes every node
    if context is not None and context == memo.context:
        context = memo.context  # the same object: each node's key compares at once
    return context


def _node_key(
    visit: _Visit, name: str, manifest: Manifest, *, old: NodeEntry | None
) -> Hashable | None:
    """The node's memo key; None when it cannot be reused (no context, or a stale agent).

    `old` is the memo's entry, whose key holds while the node and plugin pod are the very
    objects it read (at 10,000 nodes reading their versions again was a tenth of a build)."""
    if visit.context is None:
        return None
    received = visit.inputs.state.reports.get(name)
    # a stale agent's age is in its finding: such a node is recomputed every time
    if received is not None and received.received_at < visit.fresh:
        return None
    plugin_pod = visit.index.plugin_by_node.get(name)
    if old is not None and old.read_same(visit.context, manifest, plugin_pod):
        return old.key
    return node_key(manifest, plugin_pod, visit.context)


def _reuse(old: NodeEntry, visit: _Visit, name: str, key: Hashable) -> bool:
    """Whether the memo's entry still holds; if so its agent's age is brought up to now."""
    received = visit.inputs.state.reports.get(name)
    index = visit.index
    if not old.reusable(key, received, index.pods_by_node.get(name, []), index):
        return False
    old.renew(visit.clock, visit.inputs.options.agent_stale_after_s, received)
    return True


def _fresh_node(visit: _Visit, name: str, manifest: Manifest) -> NodeFacts:
    """The node's facts computed anew, with its DRA devices and claims joined in."""
    index = visit.index
    node_facts = build_node_facts(
        manifest,
        visit.inputs,
        pods=index.pods_by_node.get(name, []),
        plugin_pod=index.plugin_by_node.get(name),
        spec=_owner(index, manifest),
    )
    apply_dra(visit.dra, node_facts)
    return node_facts


def _entry(
    visit: _Visit,
    name: str,
    key: Hashable,
    node_facts: NodeFacts,
    *,
    read: tuple[Hashable, Manifest, Manifest | None],
) -> NodeEntry:
    received = visit.inputs.state.reports.get(name)
    return NodeEntry(
        key,
        read,
        received,
        visit.index.pods_by_node.get(name, []),
        pod_refs(received, visit.index.facts_by_uid),
        node_facts,
        ages_at=visit.clock,
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
