"""The engine's working view of each node, shared by the snapshot builder and the findings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from app.domain.accounting.ledger.models import GpuFacts, Visibility
from app.domain.accounting.pods import PodFacts, is_ready, parse_count, pod_phase
from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.kube_time import parse_time
from app.domain.plugin.daemonset import PluginSpec
from app.domain.plugin.effective import EffectiveConfig
from app.domain.report import ReceivedReport
from app.domain.snapshot import (
    AgentState,
    Mode,
    PluginPod,
    PodSlots,
    ResourceState,
)

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
class NodeInputs:
    """What the engine found for every node once: the plugin, its default config, the pods."""

    spec: PluginSpec | None
    default_config: EffectiveConfig
    state: ClusterState
    options: AccountingOptions
    now: datetime
    ages_at: datetime  # the moment agents' ages are reckoned at (at or before `now`)
    slots_by_uid: Mapping[str, Mapping[str, int]]
    pods_by_uid: Mapping[str, Manifest]


@dataclass
class ClusterFacts(NodeInputs):
    """The node inputs with every node's facts: what the findings read."""

    nodes: list[NodeFacts] = field(default_factory=list)
    plugin_pods: Sequence[Manifest] = field(default_factory=list)
    pod_facts: Mapping[str, PodFacts] = field(default_factory=dict)  # by uid, as pods_by_uid


def is_k3s(node: Manifest) -> bool:
    info = (node.get("status") or {}).get("nodeInfo") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    return "+k3s" in str(info.get("kubeletVersion", "")) or (
        labels.get("node.kubernetes.io/instance-type") == "k3s"
    )


def resource_count(node: Manifest, field_name: str, resource: str) -> int | None:
    """status.capacity / status.allocatable of one resource; None when the key is absent."""
    values = (node.get("status") or {}).get(field_name) or {}
    if resource not in values:
        return None
    return parse_count(values[resource], field=f"status.{field_name}.{resource}")


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


def is_stale(received: ReceivedReport, now: datetime, stale_after_s: float) -> bool:
    """Whether the agent behind `received` is stale at `now`."""
    return stale_age(agent_age(received, now), stale_after_s)


def stale_age(age_s: float, stale_after_s: float) -> bool:
    """The stale rule: an agent whose report is more than `stale_after_s` old is stale."""
    return age_s > stale_after_s


def fresh_from(now: datetime, stale_after_s: float) -> datetime:
    """The stale rule solved for the report: an agent is fresh at `now` exactly when its
    report was received at or after this moment (a time comparison per node, where
    `is_stale` reckons an age)."""
    return ages_clock(now) - timedelta(seconds=stale_after_s)


def stale_from(received: ReceivedReport, stale_after_s: float) -> datetime:
    """The first moment `is_stale` holds for `received`: the age on the whole-second clock
    passes `stale_after_s` at the first whole second after `received_at + stale_after_s`."""
    moment = received.received_at + timedelta(seconds=stale_after_s)
    return ages_clock(moment) + timedelta(seconds=1)


def next_stale_at(
    received: Iterable[ReceivedReport], *, now: datetime, stale_after_s: float
) -> datetime | None:
    """The earliest moment after `now` at which one of the agents behind `received` turns
    stale (those already stale at `now` are left out); None when none will.

    The walk over every node compares times only (`fresh_from`).
    """
    oldest = fresh_from(now, stale_after_s)
    fresh = (r for r in received if r.received_at >= oldest)
    first = min(fresh, key=lambda r: r.received_at, default=None)
    return None if first is None else stale_from(first, stale_after_s)


def agent_state(received: ReceivedReport, *, now: datetime, stale_after_s: float) -> AgentState:
    report = received.report
    age_s = agent_age(received, now)
    return AgentState(
        collected_at=report.collected_at,
        received_at=received.received_at,
        age_s=age_s,
        fresh=not stale_age(age_s, stale_after_s),
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
