"""What a planned change will do, and how far its rollout got: diffs, slots per node, stuck parts.

Pure functions over manifests and the current snapshot, so the preview and the rollout
view cost the API server nothing beyond the dry run.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass

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
from app.domain.snapshot import Mode, Snapshot

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


def slots_by_node(snapshot: Snapshot | None, after: PluginSettings) -> list[NodeSlots]:
    """Per GPU node: slots now and after, and the pods that would no longer fit."""
    if snapshot is None:
        return []
    rows: list[NodeSlots] = []
    for node in snapshot.nodes:
        if not node.gpu_node:
            continue
        after_slots = slots_of(after, node.visible_gpus)
        active = [
            p
            for p in node.pods
            if p.phase not in ("Succeeded", "Failed") and p.resource == node.resource
        ]  # MIG slices and other resources are not what the mode switch changes
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
