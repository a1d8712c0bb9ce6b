"""What a planned change will do, and how far its rollout got: diffs, slots per node, stuck parts.

Pure functions over manifests and the current snapshot, so the preview and the rollout
view cost the API server nothing beyond the dry run.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass, replace
from typing import Literal

from app.domain.changes.edits import dump_yaml
from app.domain.changes.models import PREVIOUS_ANNOTATION, PluginSettings
from app.domain.changes.rollout import (  # re-exported: callers import them from here
    NodeRollout,
    PodRollout,
    RolloutStatus,
    rollout_status,
    slots_of,
)
from app.domain.cluster import Manifest
from app.domain.snapshot import Mode, NodeState, PodSlots, Snapshot

__all__ = [
    "NodeRollout",
    "NodeSlots",
    "PodImpact",
    "PodRollout",
    "RolloutStatus",
    "object_diff",
    "rollout_status",
    "slots_by_node",
    "slots_of",
]

_NOISE = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp")


@dataclass(frozen=True)
class PodImpact:
    """A pod that holds slots the node will not advertise after the change.

    `reason` is a code, worded by the web layer as `impact.<reason>`: `resource-gone` (the
    pod's resource will not be advertised), `over-advertised` (the node's pods hold `held`,
    it will advertise `advertised`), `refused-above-one` (asks for more than one slot of a
    plugin that refuses that on restart).
    """

    pod: str
    slots: int
    resource: str
    reason: str
    held: int = 0
    advertised: int = 0


UnchangedReason = Literal["other-install", "own-daemonset", "dra", "plugin-failing"]


@dataclass(frozen=True)
class NodeSlots:
    """One GPU node's slots before and after the change.

    `unchanged` says why a change cannot reach the node (its figures stay): another plugin
    install (`governed_by` names it), its own split DaemonSet, DRA, or a failing plugin pod.
    """

    node: str
    visible_gpus: int | None
    before: int | None
    before_resource: str
    after: int | None
    after_resource: str
    held: int
    pods: tuple[PodImpact, ...]
    unchanged: UnchangedReason | None = None
    governed_by: str | None = None


def object_diff(before: Manifest | None, after: Manifest | None, *, title: str) -> str:
    """A unified diff of two objects as YAML, without server-managed fields."""
    old = dump_yaml(_clean(before)).splitlines() if before is not None else []
    new = dump_yaml(_clean(after)).splitlines() if after is not None else []
    lines = difflib.unified_diff(
        old, new, fromfile=f"{title} (now)", tofile=f"{title} (after)", lineterm="", n=3
    )
    return "\n".join(lines)


def label_diff(node: Manifest | None, patch: Manifest, *, title: str) -> str:
    """The node labels a label patch (`{"labels": {key: value or None}}`) changes, as a YAML
    diff like any object's: only the keys it touches, a None value removed."""
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    touched = patch.get("labels") or {}
    before = {k: labels[k] for k in touched if k in labels}
    after = {k: v for k, v in touched.items() if v is not None}
    return object_diff(
        {"metadata": {"labels": before}}, {"metadata": {"labels": after}}, title=title
    )


def _clean(obj: Manifest | None) -> Manifest:
    cleaned = copy.deepcopy(obj or {})
    cleaned.pop("status", None)
    meta = cleaned.get("metadata") or {}
    for key in _NOISE:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    if PREVIOUS_ANNOTATION in annotations:
        size = len(str(annotations[PREVIOUS_ANNOTATION]))
        annotations[PREVIOUS_ANNOTATION] = f"<{size} bytes>"
    return cleaned


def slots_by_node(
    snapshot: Snapshot | None,
    after: PluginSettings,
    *,
    target: str | None = None,
    failing: frozenset[str] = frozenset(),
) -> list[NodeSlots]:
    """Per GPU node: slots now (what it advertises) and after, and the pods that would not fit.

    `target` (namespace/name) is the DaemonSet the change writes: a node another plugin
    DaemonSet governs, a DRA node and a node whose plugin pod fails (`failing`) keep their
    figures, with the reason. None: every GPU node is taken as the target's.
    """
    if snapshot is None:
        return []
    rows: list[NodeSlots] = []
    for node in snapshot.nodes:
        if not node.gpu_node:
            continue
        before = _advertised(node)
        reason, owner = _unreached(node, target, failing)
        if reason is not None:
            rows.append(replace(_as_now(node, before), unchanged=reason, governed_by=owner))
            continue
        rows.append(_reached(node, after, before))
    return rows


def _as_now(node: NodeState, before: int | None) -> NodeSlots:
    """The node's row with its figures as they are now (what a change that misses it leaves)."""
    return NodeSlots(
        node=node.name,
        visible_gpus=node.visible_gpus,
        before=before,
        before_resource=node.resource,
        after=before,
        after_resource=node.resource,
        held=sum(p.slots for p in _active(node)),
        pods=(),
    )


def _advertised(node: NodeState) -> int | None:
    """What the node advertises now: the overview's allocatable (None: nothing)."""
    return node.allocatable


def _unreached(
    node: NodeState, target: str | None, failing: frozenset[str]
) -> tuple[UnchangedReason | None, str | None]:
    owner = node.config.daemonset if node.config is not None else None
    if node.allocation == "dra":
        return "dra", owner
    if target is not None and owner is not None and owner != target:
        own = node.labels.get("gpu-slots.io/plugin-daemonset")
        split = own is not None and owner.endswith(f"/{own}")
        return ("own-daemonset" if split else "other-install"), owner
    if node.name in failing:
        return "plugin-failing", owner
    return None, owner


def _active(node: NodeState) -> list[PodSlots]:
    return [
        p
        for p in node.pods
        if p.phase not in ("Succeeded", "Failed") and p.resource == node.resource
    ]  # MIG slices and other resources are not what the mode switch changes


def _unhealthy_ids(node: NodeState) -> int:
    """Device IDs the plugin reports unhealthy now (capacity - allocatable).

    The plugin (v0.15-v0.19, and the simulator's emulation) marks one ID per unhealthy GPU
    whatever the replicas, and the restarted plugin finds the same GPUs unhealthy: the
    count carries over to the new config.
    """
    if node.capacity is None or node.allocatable is None:
        return 0
    return max(0, node.capacity - node.allocatable)


def _reached(node: NodeState, after: PluginSettings, before: int | None) -> NodeSlots:
    advertised = slots_of(after, node.visible_gpus)
    after_slots = None if advertised is None else max(0, advertised - _unhealthy_ids(node))
    active = _active(node)
    held = sum(p.slots for p in active if p.resource == after.resource)
    impacts: list[PodImpact] = []
    for pod in active:
        if pod.resource != after.resource:
            impacts.append(PodImpact(pod.pod, pod.slots, pod.resource, "resource-gone"))
        elif after_slots is not None and held > after_slots:
            impacts.append(
                PodImpact(pod.pod, pod.slots, pod.resource, "over-advertised", held, after_slots)
            )
        elif (
            after.mode is Mode.TIME_SLICING
            and after.fail_requests_greater_than_one
            and pod.slots > 1
        ):
            impacts.append(PodImpact(pod.pod, pod.slots, pod.resource, "refused-above-one"))
    return replace(
        _as_now(node, before),
        after=after_slots,
        after_resource=after.resource,
        held=held,
        pods=tuple(impacts),
    )
