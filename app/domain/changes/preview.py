"""What a planned change will do, and how far its rollout got: diffs, slots per node, stuck parts.

Pure functions over manifests and the current snapshot, so the preview and the rollout
view cost the API server nothing beyond the dry run.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.domain.changes.edits import dump_yaml
from app.domain.changes.models import PREVIOUS_ANNOTATION, PluginSettings
from app.domain.cluster import Manifest
from app.domain.kube_time import parse_time
from app.domain.snapshot import Mode, Snapshot

_NOISE = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp")


@dataclass(frozen=True)
class PodImpact:
    """A pod that holds slots the node will not advertise after the change."""

    pod: str
    slots: int
    resource: str
    reason: str


@dataclass(frozen=True)
class NodeSlots:
    """One GPU node's slots before and after the change."""

    node: str
    visible_gpus: int | None
    before: int | None
    before_resource: str
    after: int | None
    after_resource: str
    held: int
    pods: tuple[PodImpact, ...]


@dataclass(frozen=True)
class PodRollout:
    node: str
    name: str
    ready: bool
    updated: bool
    phase: str


@dataclass(frozen=True)
class NodeRollout:
    node: str
    expected: int | None
    advertised: int | None
    resource: str

    @property
    def ok(self) -> bool:
        return self.expected is None or self.advertised == self.expected


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
    stuck: tuple[str, ...]

    @property
    def done(self) -> bool:
        return not self.stuck


def object_diff(before: Manifest | None, after: Manifest | None, *, title: str) -> str:
    """A unified diff of two objects as YAML, without server-managed fields."""
    old = dump_yaml(_clean(before)).splitlines() if before is not None else []
    new = dump_yaml(_clean(after)).splitlines() if after is not None else []
    lines = difflib.unified_diff(
        old, new, fromfile=f"{title} (now)", tofile=f"{title} (after)", lineterm="", n=3
    )
    return "\n".join(lines)


def _clean(obj: Manifest | None) -> Manifest:
    cleaned = copy.deepcopy(obj or {})
    cleaned.pop("status", None)
    meta = cleaned.get("metadata") or {}
    for key in _NOISE:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    if PREVIOUS_ANNOTATION in annotations:
        size = len(str(annotations[PREVIOUS_ANNOTATION]))
        annotations[PREVIOUS_ANNOTATION] = f"<the config before this change, {size} bytes>"
    return cleaned


def slots_of(settings: PluginSettings, visible_gpus: int | None) -> int | None:
    if visible_gpus is None:
        return None
    return visible_gpus * (settings.replicas if settings.mode is Mode.TIME_SLICING else 1)


def slots_by_node(snapshot: Snapshot | None, after: PluginSettings) -> list[NodeSlots]:
    """Per GPU node: slots now and after, and the pods that would no longer fit."""
    if snapshot is None:
        return []
    rows: list[NodeSlots] = []
    for node in snapshot.nodes:
        if not node.gpu_node:
            continue
        after_slots = slots_of(after, node.visible_gpus)
        active = [p for p in node.pods if p.phase not in ("Succeeded", "Failed")]
        same = [p for p in active if p.resource == after.resource]
        held = sum(p.slots for p in same)
        impacts: list[PodImpact] = []
        for pod in active:
            if pod.resource != after.resource:
                impacts.append(
                    PodImpact(pod.pod, pod.slots, pod.resource, f"{pod.resource} will be gone")
                )
            elif after_slots is not None and held > after_slots:
                impacts.append(
                    PodImpact(
                        pod.pod,
                        pod.slots,
                        pod.resource,
                        f"the node's pods hold {held}, it will advertise {after_slots}",
                    )
                )
            elif (
                after.mode is Mode.TIME_SLICING
                and after.fail_requests_greater_than_one
                and pod.slots > 1
            ):
                impacts.append(
                    PodImpact(
                        pod.pod, pod.slots, pod.resource, "asks for >1 slot: refused on restart"
                    )
                )
        before = node.capacity if node.capacity is not None else node.expected_slots
        rows.append(
            NodeSlots(
                node=node.name,
                visible_gpus=node.visible_gpus,
                before=before,
                before_resource=node.resource,
                after=after_slots,
                after_resource=after.resource,
                held=held,
                pods=tuple(impacts),
            )
        )
    return rows


def rollout_status(
    daemonset: Manifest | None,
    pods: Sequence[Manifest],
    snapshot: Snapshot | None,
    *,
    expected: PluginSettings,
    generation: int,
    since: datetime | None = None,
) -> RolloutStatus:
    """How far the DaemonSet's `generation` rolled out, from cached objects and the snapshot."""
    ds = daemonset or {}
    status = ds.get("status") or {}
    meta = ds.get("metadata") or {}
    namespace = meta.get("namespace")
    selector: Mapping[str, Any] = ((ds.get("spec") or {}).get("selector") or {}).get(
        "matchLabels"
    ) or {}
    stuck: list[str] = []
    current = int(meta.get("generation") or 0)
    observed = int(status.get("observedGeneration") or 0)
    desired = int(status.get("desiredNumberScheduled") or 0)
    if daemonset is None:
        stuck.append("The DaemonSet is gone.")
    elif current > generation:
        stuck.append(f"The DaemonSet changed again since (generation {current}).")
    if observed < generation:
        stuck.append(f"The DaemonSet controller has not seen generation {generation} yet.")
    rows: list[PodRollout] = []
    for pod in pods:
        pod_meta = pod.get("metadata") or {}
        labels = pod_meta.get("labels") or {}
        if pod_meta.get("namespace") != namespace or not selector:
            continue
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if pod_meta.get("deletionTimestamp"):
            continue
        rows.append(_pod_rollout(pod, generation=generation, since=since))
    for row in rows:
        if not row.updated:
            stuck.append(f"Plugin pod {row.name} on {row.node} still runs the old template.")
        elif not row.ready:
            stuck.append(f"Plugin pod {row.name} on {row.node} is not ready ({row.phase}).")
    updated = sum(1 for r in rows if r.updated)
    ready = sum(1 for r in rows if r.updated and r.ready)
    if updated < desired:
        stuck.append(f"{updated} of {desired} plugin pods run the new template.")
    nodes: list[NodeRollout] = []
    for node in snapshot.nodes if snapshot is not None else []:
        if not node.gpu_node:
            continue
        want = slots_of(expected, node.visible_gpus)
        advertised = node.capacity if node.resource == expected.resource else None
        row_node = NodeRollout(node.name, want, advertised, expected.resource)
        nodes.append(row_node)
        if not row_node.ok:
            shown = "nothing" if advertised is None else str(advertised)
            stuck.append(
                f"Node {node.name} advertises {shown} {expected.resource}, expected {want}."
            )
    return RolloutStatus(
        generation=generation,
        observed_generation=observed,
        desired=desired,
        updated=updated,
        ready=ready,
        pods=tuple(rows),
        nodes=tuple(nodes),
        stuck=tuple(stuck),
    )


def _pod_rollout(pod: Manifest, *, generation: int, since: datetime | None) -> PodRollout:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    label = (meta.get("labels") or {}).get("pod-template-generation")
    if label is not None:
        updated = label == str(generation)
    else:
        started = parse_time(status.get("startTime"))
        updated = since is not None and started is not None and started >= since
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return PodRollout(
        node=str((pod.get("spec") or {}).get("nodeName") or "?"),
        name=str(meta.get("name", "")),
        ready=ready,
        updated=updated,
        phase=str(status.get("phase") or "Unknown"),
    )
