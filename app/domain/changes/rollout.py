"""How far a plugin change rolled out, and when it is done.

Done means every node that should advertise the new count does. Nodes the change cannot
make advertise are listed apart instead of awaited: nodes expected at 0 (no GPU visible to
the plugin) and nodes whose plugin pod fails (CrashLoopBackOff, ...), saying whether they
were already failing before the change. Pure: cached manifests and the snapshot in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from app.domain.accounting.nodes import plugin_pod_failing
from app.domain.changes.models import PluginSettings
from app.domain.cluster import Manifest
from app.domain.kube_time import parse_time
from app.domain.snapshot import Mode, Snapshot

NodeRolloutState = Literal["done", "waiting", "zero", "failing"]


@dataclass(frozen=True)
class PodRollout:
    node: str
    name: str
    ready: bool
    updated: bool
    phase: str
    failing: bool = False
    changed_at: datetime | None = None  # created, or last became (un)ready: its last step


@dataclass(frozen=True)
class NodeRollout:
    node: str
    expected: int | None
    advertised: int | None
    resource: str
    state: NodeRolloutState = "waiting"
    broken_before: bool = False

    @property
    def ok(self) -> bool:
        return self.state != "waiting"


@dataclass(frozen=True)
class Waiting:
    """One thing a rollout still waits for: a code the web layer words (`rollout.<code>` in
    the catalogs) and the values it is worded with."""

    code: str
    params: Mapping[str, str | int] = field(default_factory=dict)


@dataclass(frozen=True)
class RolloutStatus:
    """Where the rollout of a DaemonSet generation stands."""

    generation: int
    observed_generation: int
    desired: int
    updated: int
    ready: int
    pods: tuple[PodRollout, ...]
    nodes: tuple[NodeRollout, ...]
    stuck: tuple[Waiting, ...]
    # Nodes whose unavailable plugin pods hold the DaemonSet controller back (its budget,
    # maxUnavailable, is spent on them): the rollout cannot progress until they are fixed.
    blocked_by: tuple[str, ...] = ()
    # The blocking nodes whose plugin pod fails (CrashLoopBackOff, ...) when they alone spend
    # the whole budget: they never become ready, so the rollout holds there for good, unlike
    # a pod that is only starting.
    held_by: tuple[str, ...] = ()
    # When the rollout last moved: the change applied, an updated pod created or turned ready.
    progressed_at: datetime | None = None

    @property
    def done(self) -> bool:
        return not self.stuck

    def nodes_in(self, state: NodeRolloutState) -> list[NodeRollout]:
        return [node for node in self.nodes if node.state == state]


def slots_of(settings: PluginSettings, visible_gpus: int | None) -> int | None:
    if visible_gpus is None:
        return None
    return visible_gpus * (settings.replicas if settings.mode is Mode.TIME_SLICING else 1)


def _plugin_pods(daemonset: Manifest, pods: Sequence[Manifest]) -> list[Manifest]:
    meta = daemonset.get("metadata") or {}
    namespace = meta.get("namespace")
    selector: Mapping[str, Any] = ((daemonset.get("spec") or {}).get("selector") or {}).get(
        "matchLabels"
    ) or {}
    found = []
    for pod in pods:
        pod_meta = pod.get("metadata") or {}
        labels = pod_meta.get("labels") or {}
        if pod_meta.get("namespace") != namespace or not selector:
            continue
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if pod_meta.get("deletionTimestamp"):
            continue
        found.append(pod)
    return found


@dataclass(frozen=True)
class RolloutTarget:
    """What a rollout is measured against: the settings the DaemonSet's `generation` brings,
    and the change's facts from its rollout record."""

    expected: PluginSettings
    generation: int
    since: datetime | None = None
    """When the change was applied: its first step, and what a pod without a generation label
    must have started after to count as updated."""
    broken_before: frozenset[str] = frozenset()
    """The nodes whose plugin pod was already failing before the change."""
    template_generation: int | None = None
    """The generation whose pod template this rollout brings, when a later write changed only
    the update strategy (a pod stamped since counts as updated)."""


def rollout_status(
    daemonset: Manifest | None,
    pods: Sequence[Manifest],
    snapshot: Snapshot | None,
    target: RolloutTarget,
) -> RolloutStatus:
    """How far the DaemonSet's `target.generation` rolled out, from cached objects and the
    snapshot."""
    expected, generation, since = target.expected, target.generation, target.since
    ds = daemonset or {}
    status = ds.get("status") or {}
    observed = int(status.get("observedGeneration") or 0)
    desired = int(status.get("desiredNumberScheduled") or 0)
    stuck = _generation_stuck(daemonset, generation, observed=observed)
    template = target.template_generation or generation  # the pod template it brings
    rows = _pod_rows(daemonset, pods, generation=template, since=since)
    stuck += _pods_stuck(rows)
    blocked_by = _blocking_nodes(ds, rows)
    if blocked_by:
        stuck.insert(0, _blocked_message(ds, blocked_by, desired=len(rows)))
    updated = sum(1 for r in rows if r.updated)
    failing_old = sum(1 for r in rows if r.failing and not r.updated)
    if updated + failing_old < desired:
        stuck.append(Waiting("pods-updated", {"updated": updated, "desired": desired}))
    nodes = _node_rows(ds, snapshot, rows, expected=expected, broken_before=target.broken_before)
    stuck += _nodes_waiting(nodes, expected.resource)
    return RolloutStatus(
        generation=generation,
        observed_generation=observed,
        desired=desired,
        updated=updated,
        ready=sum(1 for r in rows if r.updated and r.ready),
        pods=tuple(rows),
        nodes=tuple(nodes),
        stuck=tuple(stuck),
        blocked_by=blocked_by,
        held_by=_held_by(ds, rows, blocked_by),
        progressed_at=_progressed_at(rows, since),
    )


def _nodes_waiting(nodes: Sequence[NodeRollout], resource: str) -> list[Waiting]:
    """A line per node still advertising another count than the new config gives."""
    return [
        Waiting(
            "node-advertises-nothing" if n.advertised is None else "node-advertises",
            {
                "node": n.node,
                "advertised": n.advertised or 0,
                "resource": resource,
                "expected": n.expected or 0,
            },
        )
        for n in nodes
        if n.state == "waiting"
    ]


def _held_by(
    daemonset: Manifest, rows: Sequence[PodRollout], blocked_by: Sequence[str]
) -> tuple[str, ...]:
    """The blocking nodes whose plugin pod fails, when they alone spend the whole budget (a
    pod that is only starting spends the rest of it for a few seconds: that is progress)."""
    failing_at = {_where(r) for r in rows if r.failing}
    held = tuple(n for n in blocked_by if n in failing_at)
    return held if len(held) >= max_unavailable(daemonset, len(rows)) else ()


def _progressed_at(rows: Sequence[PodRollout], since: datetime | None) -> datetime | None:
    """The rollout's last step: the change itself, or an updated pod's latest change."""
    steps = [r.changed_at for r in rows if r.updated and r.changed_at is not None]
    if since is not None:
        steps.append(since)
    return max(steps, default=None)


def _generation_stuck(
    daemonset: Manifest | None, generation: int, *, observed: int
) -> list[Waiting]:
    """What keeps the DaemonSet itself from `generation`: gone, changed again, not observed."""
    stuck = []
    current = int(((daemonset or {}).get("metadata") or {}).get("generation") or 0)
    if daemonset is None:
        stuck.append(Waiting("daemonset-gone"))
    elif current > generation:
        stuck.append(Waiting("daemonset-changed-again", {"generation": current}))
    if observed < generation:
        stuck.append(Waiting("generation-not-seen", {"generation": generation}))
    return stuck


def _pod_rows(
    daemonset: Manifest | None,
    pods: Sequence[Manifest],
    *,
    generation: int,
    since: datetime | None,
) -> list[PodRollout]:
    """One row per plugin pod of the DaemonSet, updated or not, ready or not."""
    rows = [
        _pod_rollout(pod, generation=generation, since=since)
        for pod in (_plugin_pods(daemonset, pods) if daemonset is not None else [])
    ]
    status = (daemonset or {}).get("status") or {}
    observed = int(status.get("observedGeneration") or 0)
    desired = int(status.get("desiredNumberScheduled") or 0)
    if observed >= generation and desired > 0 and _controller_counts_all_updated(status, desired):
        # A spec change outside the pod template (updateStrategy, say) raises the generation
        # but replaces no pod: the DaemonSet controller counts the pods by revision hash.
        rows = [replace(row, updated=True) for row in rows]
    return rows


def _where(row: PodRollout) -> str:
    """The node a pod runs on, or `pod/<name>` while the scheduler has not bound it."""
    return row.node or f"pod/{row.name}"


def _pods_stuck(rows: Sequence[PodRollout]) -> list[Waiting]:
    """Pods still on the old template or not ready; a failing one is listed apart."""
    stuck = []
    for row in rows:
        bound = "" if row.node else "-unbound"
        where: dict[str, str | int] = {"pod": row.name, "node": row.node or "", "phase": row.phase}
        if row.failing:
            continue  # awaiting a failing plugin pod, old or new, would never end
        if not row.updated:
            stuck.append(Waiting(f"pod-old-template{bound}", where))
        elif not row.ready:
            stuck.append(Waiting(f"pod-not-ready{bound}", where))
    return stuck


def _node_rows(
    ds: Manifest,
    snapshot: Snapshot | None,
    rows: Sequence[PodRollout],
    *,
    expected: PluginSettings,
    broken_before: frozenset[str],
) -> list[NodeRollout]:
    """Each GPU node this DaemonSet serves: the slots it should advertise, and whether it does."""
    meta = ds.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    failing_nodes = {row.node for row in rows if row.failing}
    nodes: list[NodeRollout] = []
    for node in snapshot.nodes if snapshot is not None else []:
        owner = node.config.daemonset if node.config is not None else None
        if not node.gpu_node or (owner is not None and owner != ref):
            continue  # another plugin install runs there: this change does not reach it
        if node.allocation == "dra":
            continue  # a DRA driver hands out its GPUs: no plugin pod to await there
        want = slots_of(expected, node.visible_gpus)
        advertised = node.capacity if node.resource == expected.resource else None
        state: NodeRolloutState
        if node.name in failing_nodes:
            state = "failing"
        elif want == 0:
            state = "zero"
        elif want is None or advertised == want:
            state = "done"
        else:
            state = "waiting"
        nodes.append(
            NodeRollout(
                node.name,
                want,
                advertised,
                expected.resource,
                state=state,
                broken_before=node.name in broken_before,
            )
        )
    return nodes


def _controller_counts_all_updated(status: Manifest, desired: int) -> bool:
    return int(status.get("updatedNumberScheduled") or 0) >= desired


def max_unavailable(daemonset: Manifest, desired: int) -> int:
    """`spec.updateStrategy.rollingUpdate.maxUnavailable`: a count or a percentage (up)."""
    strategy = (daemonset.get("spec") or {}).get("updateStrategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return -(-int(value[:-1]) * desired // 100)
    return value if isinstance(value, int) and value >= 0 else 1


def _blocking_nodes(daemonset: Manifest, rows: Sequence[PodRollout]) -> tuple[str, ...]:
    """Unavailable pods that leave no budget to replace the old ready ones (RollingUpdate).

    The DaemonSet controller deletes an available old pod only while fewer than
    `maxUnavailable` of its nodes lack an available pod; a pod that never becomes ready
    (crash-looping, stuck mounting) spends that budget for good.
    """
    strategy = (daemonset.get("spec") or {}).get("updateStrategy") or {}
    old_ready = [r for r in rows if not r.updated and r.ready and not r.failing]
    unavailable = sorted({_where(r) for r in rows if r.failing or not r.ready})
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" or not old_ready:
        return ()
    if len(unavailable) < max_unavailable(daemonset, len(rows)):
        return ()
    return tuple(unavailable)


def _blocked_message(daemonset: Manifest, nodes: Sequence[str], *, desired: int) -> Waiting:
    budget = max_unavailable(daemonset, desired)
    return Waiting("blocked", {"budget": budget, "nodes": ", ".join(nodes)})


def failing_plugin_nodes(snapshot: Snapshot | None, *, target: str | None = None) -> frozenset[str]:
    """Nodes whose plugin pod fails now: recorded before a change, listed apart after it.

    `target` (namespace/name): only the nodes that DaemonSet governs.
    """
    if snapshot is None:
        return frozenset()
    return frozenset(
        node.name
        for node in snapshot.nodes
        if (target is None or (node.config is not None and node.config.daemonset == target))
        and node.plugin_pod is not None
        and not node.plugin_pod.ready
        and node.failing_gpus + (node.visible_gpus or 0) > 0
        and (node.plugin_pod.state or "") not in ("ContainerCreating", "Running", "Pending")
    )


def _pod_rollout(pod: Manifest, *, generation: int, since: datetime | None) -> PodRollout:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    label = (meta.get("labels") or {}).get("pod-template-generation")
    if label is not None:
        updated = label.isdigit() and int(label) >= generation
    else:
        started = parse_time(status.get("startTime"))
        updated = since is not None and started is not None and started >= since
    conditions = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    ready = any(c.get("status") == "True" for c in conditions)
    times = [parse_time(meta.get("creationTimestamp"))]
    times += [parse_time(c.get("lastTransitionTime")) for c in conditions]
    return PodRollout(
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        name=str(meta.get("name", "")),
        ready=ready,
        updated=updated,
        phase=str(status.get("phase") or "Unknown"),
        failing=plugin_pod_failing(pod),
        changed_at=max((t for t in times if t is not None), default=None),
    )
