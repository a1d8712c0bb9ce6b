"""The engine's working view of each node, shared by the snapshot builder and the findings."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from app.domain.accounting.gpus import GpuFacts, Visibility
from app.domain.accounting.pods import PodFacts, PodMemo, is_ready, parse_count, pod_phase
from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.kube_time import parse_time
from app.domain.plugin.config import PluginConfig
from app.domain.plugin.daemonset import PluginSpec
from app.domain.plugin.effective import EffectiveConfig
from app.domain.report import ReceivedReport
from app.domain.snapshot import (
    AgentState,
    Finding,
    Mode,
    NodeState,
    PluginPod,
    PodSlots,
    ResourceState,
)

if TYPE_CHECKING:
    from app.domain.accounting.pod_index import PodIndex, PodIndexMemo

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


@dataclass
class NodeFacts:
    name: str
    manifest: Manifest
    labels: Mapping[str, str]
    ready: bool
    k3s: bool
    gpu_node: bool
    config: EffectiveConfig
    mode: Mode
    replicas: int
    resource: str
    report: ReceivedReport | None
    agent: AgentState | None
    visibility: Visibility | None
    gpus: list[GpuFacts]
    physical_gpus: int | None
    visible_gpus: int | None
    host_gpus: int | None
    failing_gpus: int
    expected_slots: int | None
    capacity: int | None
    allocatable: int | None
    pods: list[PodSlots]
    requested: int
    free: int | None
    plugin_pod: Manifest | None
    plugin_pod_state: PluginPod | None
    # The ledger (issue 12): the DaemonSet that owns the node, schedulability, every resource.
    spec: PluginSpec | None = None
    unschedulable_reason: str | None = None
    resources: dict[str, ResourceState] = field(default_factory=dict)
    expected_by_resource: dict[str, int] = field(default_factory=dict)
    held_by_resource: dict[str, list[PodSlots]] = field(default_factory=dict)
    stranded: int = 0

    @property
    def schedulable(self) -> bool:
        return self.unschedulable_reason is None

    @property
    def gpu_capacity_total(self) -> int:
        """Capacity of every nvidia.com/ resource together."""
        values = (self.manifest.get("status") or {}).get("capacity") or {}
        return sum(parse_count(v) for k, v in values.items() if str(k).startswith("nvidia.com/"))

    @property
    def has_gpu_data(self) -> bool:
        return self.report is not None and self.report.report.source != "none"


@dataclass
class ClusterFacts:
    state: ClusterState
    options: AccountingOptions
    now: datetime
    spec: PluginSpec | None
    default_config: EffectiveConfig
    nodes: list[NodeFacts]
    pods_by_uid: Mapping[str, Manifest]
    slots_by_uid: Mapping[str, Mapping[str, int]]
    plugin_pods: Sequence[Manifest] = field(default_factory=list)
    pod_facts: Mapping[str, PodFacts] = field(default_factory=dict)  # by uid, as pods_by_uid


@dataclass
class NodeEntry:
    """One node's facts, findings and state from an earlier snapshot, with what they read."""

    key: Hashable  # versions of the node, DaemonSet, ConfigMaps, plugin pod; options
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
            or self.report is not report
            or not _same(self.pods, pods)
        ):
            return False
        if index.changed is None:  # every pod was indexed again: compare the very objects
            return _same(self.process_pods, pod_refs(report, index.facts_by_uid))
        return self.process_uids.isdisjoint(index.changed)

    def renew(self, now: datetime, stale_after_s: float) -> None:
        """Bring the agent's age up to `now` in the kept facts and state (a new second)."""
        if self.report is None or self.facts.agent is None or self.state is None:
            return
        if self.ages_at == ages_clock(now):
            return  # the same second: every age is as it was
        self.ages_at = ages_clock(now)
        age_s = agent_age(self.report, now)
        agent = self.facts.agent.model_copy(
            update={"age_s": age_s, "fresh": age_s <= stale_after_s}
        )
        self.facts.agent = agent
        self.state = self.state.model_copy(update={"agent": agent})


def _same(old: Sequence[object], new: Sequence[object]) -> bool:
    if old is new:
        return True
    return len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))


@dataclass
class PodFindingsMemo:
    """The pod findings of the latest build and what they read (see engine._pod_findings)."""

    plugin_pods: Sequence[Manifest]  # the very list
    configs: dict[str, PluginConfig | None]  # each node's config
    default: PluginConfig | None
    by_uid: dict[str, list[Finding]]  # pods with findings only
    findings: list[Finding]


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
        self.pending: dict[str, PodFacts] | None = None  # pods waiting for GPU resources
        self.nodes: dict[str, NodeEntry] = {}
        self.context: Hashable | None = None  # what every node read besides itself, last time
        self.reused = 0  # nodes reused by the latest build


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


def is_k3s(node: Manifest) -> bool:
    info = (node.get("status") or {}).get("nodeInfo") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    return "+k3s" in str(info.get("kubeletVersion", "")) or (
        labels.get("node.kubernetes.io/instance-type") == "k3s"
    )


def resource_count(node: Manifest, field_name: str, resource: str) -> int | None:
    """status.capacity / status.allocatable of one resource; None when the key is absent."""
    values = (node.get("status") or {}).get(field_name) or {}
    return parse_count(values[resource]) if resource in values else None


def has_nvidia_capacity(node: Manifest) -> bool:
    values = (node.get("status") or {}).get("capacity") or {}
    return any(str(name).startswith("nvidia.com/") for name in values)


def agent_age(received: ReceivedReport, now: datetime) -> float:
    """Seconds since the dashboard received the report, on the whole-second clock.

    Ages are reckoned at `now` with its fraction of a second dropped (pages show whole
    seconds; a report of this very second is 0 s old): builds within one second find every
    age as it was, so a node whose inputs did not change keeps its state untouched.
    """
    return max((ages_clock(now) - received.received_at).total_seconds(), 0.0)


def ages_clock(now: datetime) -> datetime:
    """`now` on the whole-second clock agent ages are reckoned on (see agent_age)."""
    return now.replace(microsecond=0) if now.microsecond else now


def agent_state(received: ReceivedReport, *, now: datetime, stale_after_s: float) -> AgentState:
    report = received.report
    age_s = agent_age(received, now)
    return AgentState(
        collected_at=report.collected_at,
        received_at=received.received_at,
        age_s=age_s,
        fresh=age_s <= stale_after_s,
        source=report.source,
        driver_version=report.driver_version,
        error=report.error,
    )


def plugin_pod_state(pod: Manifest) -> PluginPod:
    meta = pod.get("metadata") or {}
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return PluginPod(
        name=str(meta.get("name", "")),
        phase=pod_phase(pod),
        ready=is_ready(pod),
        started_at=parse_time((pod.get("status") or {}).get("startTime")),
        image=containers[0].get("image"),
        state=container_state(pod),
        restarts=sum(
            int(s.get("restartCount") or 0)
            for s in (pod.get("status") or {}).get("containerStatuses") or []
        ),
    )


def container_state(pod: Manifest) -> str | None:
    """What `kubectl get pods` shows as STATUS: a waiting/terminated reason, else the phase."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (state.get(key) or {}).get("reason")
            if reason:
                return str(reason)
    phase = status.get("phase")
    return str(phase) if phase else None


def is_plugin_pod(pod: Manifest, *, name: str, namespace: str, selector: Mapping[str, str]) -> bool:
    meta = pod.get("metadata") or {}
    if meta.get("namespace") != namespace:
        return False
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "DaemonSet" and owner.get("name") == name:
            return True
    labels = meta.get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())
