"""Every node's own findings and state, worked out where no kept ones hold, and their sums."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

from app.domain.accounting.facts import ClusterFacts, NodeFacts, ages_clock
from app.domain.accounting.states import build_node_state
from app.domain.accounting.sums import NodeSums, node_part, sums_of
from app.domain.cluster import Manifest
from app.domain.dra.inventory import DraView
from app.domain.dra.ledger import claimed_gpus, dra_node_state
from app.domain.engine.memo import EngineMemo, NodeLayout
from app.domain.engine.nodes import NodeBuild
from app.domain.findings.catalogue import sort_key
from app.domain.findings.dra_node import dra_node_findings
from app.domain.findings.gpu import gpu_findings
from app.domain.findings.health import health_findings
from app.domain.findings.node import node_findings
from app.domain.findings.stale_ids import stale_id_findings
from app.domain.snapshot import Finding, NodeState
from app.domain.usage.holders import owner_of


def node_results(
    facts: ClusterFacts, built: NodeBuild, dra: DraView | None, memo: EngineMemo | None
) -> tuple[list[Finding], list[NodeState], NodeSums]:
    """Every node's own findings (node + GPU, in node order), its state, and their sums;
    worked out only where `built` has none kept."""
    for position in built.todo:
        node_facts = built.nodes[position]
        own, node_state = _node_result(facts, node_facts, dra)
        built.states[position], built.own[position] = node_state, own
        entry = built.entries.get(node_facts.name)
        if entry is not None and entry.facts is node_facts:
            entry.findings, entry.state = own, node_state
    states = [s for s in built.states if s is not None]
    assert len(states) == len(built.nodes)
    sums = _sums(built, states, memo)
    if memo is not None:
        memo.layout = NodeLayout(
            nodes=built.nodes,
            states=states,
            own=built.own,
            configs=built.configs,
            reports=facts.state.reports,
            clock=ages_clock(facts.ages_at),
            unkeyed=built.unkeyed,
        )
    return list(chain.from_iterable(built.own)), states, sums


def _sums(built: NodeBuild, states: list[NodeState], memo: EngineMemo | None) -> NodeSums:
    """The nodes' sums: kept by difference in the memo (by node name) where names are
    unique, else added up (by position)."""
    if memo is None or not memo.unique:
        if memo is not None:
            memo.sums = None
        return sums_of(built.nodes, states)
    sums = memo.sums
    positions: Sequence[int] = built.todo
    if sums is None:
        sums = memo.sums = NodeSums()
        positions = range(len(built.nodes))
    elif not built.delta:
        for gone in sums.parts.keys() - memo.position.keys():
            sums.take(gone, None)
    for position in positions:
        node_facts = built.nodes[position]
        sums.take(node_facts.name, node_part(node_facts, states[position]))
    return sums


def _node_result(
    facts: ClusterFacts, node_facts: NodeFacts, dra: DraView | None
) -> tuple[list[Finding], NodeState]:
    """A node's own findings (node + GPU) and state."""
    claimed = claimed_gpus(dra, node_facts)
    own = node_findings(facts, node_facts) + gpu_findings(facts, node_facts, claimed=claimed)
    own += health_findings(node_facts)
    own += stale_id_findings(node_facts)
    own = dra_node_findings(dra, facts, node_facts, own)
    own.sort(key=sort_key)
    node_state = dra_node_state(dra, node_facts, build_node_state(node_facts, own))
    return own, _with_owners(node_state, facts.pods_by_uid, dra)


def _with_owners(
    node_state: NodeState, pods_by_uid: Mapping[str, Manifest], dra: DraView | None
) -> NodeState:
    """The node state with the owner of each pod holding its GPUs: its pods with slots or a
    fraction, and the pods of the DRA claims on its GPUs (what usage lists)."""
    uids = {pod.pod: pod.uid for pod in node_state.pods}
    if dra is not None:
        for gpu in node_state.gpus:
            for holder in gpu.holders:
                if holder.source == "dra" and holder.pod not in uids:
                    uids[holder.pod] = dra.uid_by_pod.get(holder.pod, "")
    if not uids:
        return node_state
    owners = {
        pod: owner_of(manifest) if (manifest := pods_by_uid.get(uid)) is not None else pod
        for pod, uid in uids.items()
    }
    return node_state.model_copy(update={"owners": owners})


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
