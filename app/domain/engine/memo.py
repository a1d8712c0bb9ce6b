"""What the engine keeps from one snapshot to the next, and the keys that say it still holds."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel

from app.domain.accounting.facts import (
    NodeFacts,
    agent_age,
    agent_state,
    ages_clock,
    stale_age,
)
from app.domain.accounting.pod_index import PodIndex, PodIndexMemo
from app.domain.accounting.pods import PodFacts, PodMemo
from app.domain.accounting.sums import NodeSums
from app.domain.bounds import SetAside
from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.plugin.config import PluginConfig
from app.domain.report import AgentReport, ReceivedReport
from app.domain.sequences import same_objects
from app.domain.snapshot import Finding, NodeState, PendingPod


@dataclass
class NodeEntry:
    """One node's facts, findings and state from an earlier snapshot, with what they read."""

    key: Hashable  # versions of the node, DaemonSet, ConfigMaps, plugin pod; options
    read: tuple[Hashable, Manifest, Manifest | None]  # the very context, node, plugin pod
    report: ReceivedReport | None  # the very report object read
    pods: Sequence[PodFacts]  # the very PodFacts of the pods holding resources on the node
    process_pods: tuple[PodFacts | None, ...]  # the pods the GPU processes name, by UID
    facts: NodeFacts
    findings: list[Finding] = field(default_factory=list)  # node + GPU findings, sorted
    state: NodeState | None = None  # before pod findings are merged in
    ages_at: datetime | None = None  # the agent age's clock (ages_clock) of facts and state
    process_uids: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.process_uids = frozenset(_process_uids(self.report))

    def read_same(self, context: Hashable, node: Manifest, plugin_pod: Manifest | None) -> bool:
        """Whether the key was made from these very objects (so it holds without reading
        their versions again; manifests are never changed in place)."""
        mine, my_node, my_pod = self.read
        return mine is context and my_node is node and my_pod is plugin_pod

    def reusable(
        self,
        key: Hashable,
        report: ReceivedReport | None,
        pods: Sequence[PodFacts],
        index: PodIndex,
    ) -> bool:
        """Whether nothing the entry read changed; `index` says which pods changed."""
        if (
            self.state is None
            or self.key != key
            or not same_readings(self.report, report)
            or not same_objects(self.pods, pods)
        ):
            return False
        if index.changed is None:  # every pod was indexed again: compare the very objects
            return same_objects(self.process_pods, pod_refs(report, index.facts_by_uid))
        return self.process_uids.isdisjoint(index.changed)

    def renew(
        self, now: datetime, stale_after_s: float, report: ReceivedReport | None = None
    ) -> None:
        """Bring the agent up to `now` in the kept facts and state (a new second, or a new
        report with the same readings: only its times differ)."""
        if self.report is None or self.facts.agent is None or self.state is None:
            return
        if report is not None and report is not self.report:
            self.report = self.facts.report = report
            self.ages_at = ages_clock(now)
            agent = agent_state(report, now=now, stale_after_s=stale_after_s)
            self.facts.agent = agent
            self.state = replaced(self.state, agent=agent)
            return
        if self.ages_at == ages_clock(now):
            return  # the same second: every age is as it was
        self.ages_at = ages_clock(now)
        age_s = agent_age(self.report, now)
        agent = replaced(self.facts.agent, age_s=age_s, fresh=not stale_age(age_s, stale_after_s))
        self.facts.agent = agent
        self.state = replaced(self.state, agent=agent)


M = TypeVar("M", bound=BaseModel)


def replaced(model: M, **changes: object) -> M:
    """`model.model_copy(update=changes)`, at a third of its cost (renewing the agent's age
    copies two models per node per second: at 10,000 nodes that was most of a build)."""
    new = model.__class__.__new__(model.__class__)
    fields_set = model.__pydantic_fields_set__
    if not changes.keys() <= fields_set:
        fields_set = fields_set | changes.keys()
    object.__setattr__(new, "__dict__", {**model.__dict__, **changes})
    object.__setattr__(new, "__pydantic_fields_set__", fields_set)
    object.__setattr__(new, "__pydantic_extra__", model.__pydantic_extra__)
    object.__setattr__(new, "__pydantic_private__", model.__pydantic_private__)
    return new


def same_readings(old: ReceivedReport | None, new: ReceivedReport | None) -> bool:
    """Whether two reports of a node hold the very same readings (only their times differ).

    The report store hands a report whose readings equal the stored one's the stored
    readings' objects (app.web.services.reports.store), so an agent that saw no change costs the
    engine the renewal of the node's agent, not the node's recomputation.
    """
    if old is new:
        return True
    if old is None or new is None:
        return False
    a, b = old.report.__dict__, new.report.__dict__
    for name in _READINGS:
        mine, theirs = a[name], b[name]
        if mine is not theirs and mine != theirs:
            return False
    return True


# Every field of a report but its time (the class's own `model_fields`, read once: reading
# it per node cost more than the comparison)
_READINGS = tuple(name for name in AgentReport.model_fields if name != "collected_at")


@dataclass
class NodeLayout:
    """The latest build's nodes in name order (the memo's `named`): what a build for a few
    changes starts from (app.domain.engine.nodes)."""

    nodes: list[NodeFacts]
    states: list[NodeState]  # before pod findings
    own: list[list[Finding]]  # each node's own findings
    configs: dict[str, PluginConfig | None]  # each node's plugin config, by name
    reports: Mapping[str, ReceivedReport]  # the very reports read
    clock: datetime  # the agents' ages' clock (ages_clock)
    unkeyed: set[str]  # nodes without a memo entry: looked at by every build


@dataclass
class PodFindingsMemo:
    """The pod findings of the latest build and what they read (see cluster_pod_findings)."""

    plugin_pods: Sequence[Manifest]  # the very list
    plugin_uids: frozenset[str]  # their UIDs
    configs: Mapping[str, PluginConfig | None]  # each node's config
    default: PluginConfig | None
    by_uid: dict[str, list[Finding]]  # pods with findings only
    findings: list[Finding]


@dataclass(frozen=True)
class PendingPods:
    """The pods waiting for GPU resources (see pending_pods): by UID, and by pod key."""

    by_uid: dict[str, PendingPod]
    listed: list[PendingPod]  # the snapshot's `pending_pods`: never changed once made


class EngineMemo:
    """What the engine keeps from one snapshot to the next (see build_snapshot).

    Pods are re-read only when their resourceVersion changes (PodMemo), and a node's facts,
    findings and state are recomputed only when something it reads changed: its manifest,
    the plugin DaemonSet or ConfigMaps, its plugin pod (all by resourceVersion), its agent
    report, the pods on it or named by its GPU processes, or its agent's freshness. Only
    the agent's age is renewed on a reused node. Objects without a resourceVersion (test
    fixtures) are never reused.
    """

    def __init__(self) -> None:
        self.pods = PodMemo()
        self.pod_index: PodIndexMemo | None = None  # the pods indexed, kept up to date
        self.pod_findings: PodFindingsMemo | None = None
        self.pending: PendingPods | None = None  # pods waiting for GPU resources
        self.set_aside: dict[str, SetAside] | None = None  # pods set aside, by UID
        self.nodes: dict[str, NodeEntry] = {}
        self.node_list: list[Manifest] = []  # the nodes of the latest build, in the cache's order
        self.named: list[tuple[str, Manifest]] = []  # ... by name, in name order
        self.unique = False  # whether their names are unique (nothing is kept otherwise)
        self.position: dict[str, int] = {}  # each name's position in `named` (unique names)
        self.context: Hashable | None = None  # what every node read besides itself, last time
        self.layout: NodeLayout | None = None  # the latest build's results, node by node
        self.sums: NodeSums | None = None  # their sums, by node name (unique names)
        # pod UID -> the nodes whose GPU processes name it
        self.process_nodes: dict[str, tuple[str, ...]] = {}
        self.reused = 0  # nodes reused by the latest build
        self.delta_builds = 0  # builds that looked only at the nodes a change touched


def version_of(obj: Manifest) -> str:
    """metadata.resourceVersion ("" when absent)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def context_key(state: ClusterState, options: AccountingOptions) -> Hashable | None:
    """What every node reads besides itself: DaemonSet and ConfigMap versions, the options."""
    daemonset = None
    if state.daemonset is not None:
        daemonset = version_of(state.daemonset)
        if not daemonset:
            return None
    configmaps = []
    for name, configmap in sorted(state.configmaps.items()):
        version = version_of(configmap)
        if not version:
            return None
        configmaps.append((name, version))
    others = []
    for other in state.daemonsets:
        version = version_of(other)
        if not version:
            return None
        others.append(version)
    return (daemonset, tuple(configmaps), options, tuple(others))


def node_key(node: Manifest, plugin_pod: Manifest | None, context: Hashable) -> Hashable | None:
    """The versions a node's results depend on; None when they cannot be reused."""
    version = version_of(node)
    if not version:
        return None
    plugin = None
    if plugin_pod is not None:
        plugin = (str((plugin_pod.get("metadata") or {}).get("uid", "")), version_of(plugin_pod))
        if not plugin[1]:
            return None
    return (context, version, plugin)


def pod_refs(
    received: ReceivedReport | None, facts_by_uid: Mapping[str, PodFacts]
) -> tuple[PodFacts | None, ...]:
    """The pods the node's GPU processes belong to, as the engine sees them now."""
    return tuple(facts_by_uid.get(uid) for uid in _process_uids(received))


def _process_uids(received: ReceivedReport | None) -> list[str]:
    if received is None:
        return []
    return [proc.pod_uid for gpu in received.report.gpus for proc in gpu.processes if proc.pod_uid]
