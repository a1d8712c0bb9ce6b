"""Who holds the slots: usage per namespace, owner or node, with idle slots and pending demand.

Read from the published snapshot alone: the slots, shares and GPU processes of each node,
each holding pod's owner (`NodeState.owners`), the pending pods (`pending_pods`) and the
idle holders (`idle_slots`). Owner is the person a pod names with a `user` or `owner` label,
else its controller (`ReplicaSet/infer-7d9f`), else the pod itself; always inside its
namespace. The engine reads it once per pod version (owner_of, pending_pod).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from app.domain.accounting.pods import PodFacts
from app.domain.cluster import Manifest
from app.domain.snapshot import NodeState, PendingPod, Snapshot
from app.domain.usage.shares import held_on_node

UsageBy = Literal["namespace", "owner", "node"]
USAGE_BY: tuple[UsageBy, ...] = ("namespace", "owner", "node")
OWNER_LABELS = ("user", "owner")


@dataclass(frozen=True)
class PodUsage:
    """One pod that holds or wants slots."""

    pod: str
    namespace: str
    owner: str
    node: str | None
    slots: int
    gpus: tuple[int, ...]
    memory_used_mib: int
    processes: int
    idle_slots: int
    idle_for_s: int | None
    pending: bool
    gpu_share: float | None = None  # the share of GPUs it holds (a slot of 4 replicas: 0.25)
    resource: str = ""  # the resource `slots` counts (the plugin's, else the pod's first)
    slots_by_resource: tuple[tuple[str, int], ...] = ()  # every resource, kept apart
    dra_devices: tuple[str, ...] = ()  # DRA devices its claims hold ("<gpu index>/<device>")


@dataclass
class UsageRow:
    """The pods of one namespace, owner or node added up."""

    key: str
    slots_held: int = 0
    pods: int = 0
    gpus: int = 0
    memory_used_mib: int = 0
    idle_slots: int = 0
    pending_pods: int = 0
    pending_slots: int = 0
    gpu_share: float = 0.0  # GPUs held in shares: slots, MIG slices, DRA devices, fractions
    slots_by_resource: dict[str, int] = field(default_factory=dict)
    dra_devices: int = 0
    pod_names: list[str] = field(default_factory=list)


def owner_of(pod: Manifest) -> str:
    """`namespace/who`, one way for every pod: who is the user/owner label, else the
    controller's name, else the pod's own name. Total: the engine asks it of any pod a
    claim names, even one set aside, so what is not a map or a list is passed over."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    labels = meta.get("labels")
    if isinstance(labels, Mapping):
        for label in OWNER_LABELS:
            if labels.get(label):
                return f"{namespace}/{labels[label]}"
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return f"{namespace}/{ref.get('name', '?')}"
    return f"{namespace}/{meta.get('name', '?')}"


def pending_pod(facts: PodFacts, pod: Manifest) -> PendingPod:
    """A pod waiting for GPU resources, as the snapshot carries it (read by read_pod(), the
    one parse step for pods, bound or pending: `facts.slots` are bounded counts)."""
    return PendingPod(
        pod=facts.key, namespace=facts.namespace, owner=owner_of(pod), slots=dict(facts.slots)
    )


def pod_usages(snapshot: Snapshot) -> list[PodUsage]:
    """Every pod holding slots or pending for the plugin's resource, from the snapshot alone."""
    idle = _idle_by_pod(snapshot)
    resource = snapshot.plugin.resource
    found = [usage for node in snapshot.nodes for usage in _holding_usages(node, idle, resource)]
    found += _pending_usages(snapshot.pending_pods, resource)
    return sorted(found, key=lambda item: (item.pending, item.pod))


def _idle_by_pod(snapshot: Snapshot) -> dict[str, tuple[int, int]]:
    """Idle slots and the longest idle seconds per pod, from the idle holders."""
    idle: dict[str, tuple[int, int]] = {}
    for item in snapshot.idle_slots:
        slots, seconds = idle.get(item.pod, (0, 0))
        idle[item.pod] = (slots + item.slots, max(seconds, item.idle_for_s))
    return idle


def _holding_usages(
    node: NodeState, idle: Mapping[str, tuple[int, int]], resource: str
) -> list[PodUsage]:
    """The pods holding slots, DRA devices or a GPU share on one node."""
    seen = held_on_node(node)
    found = []
    for pod, held in sorted(seen.items()):
        if not (held.slots or held.dra_devices or held.share):
            continue
        idle_slots, idle_s = idle.get(pod, (0, 0))
        main = resource if resource in held.slots else next(iter(sorted(held.slots)), resource)
        found.append(
            PodUsage(
                pod=pod,
                namespace=pod.partition("/")[0],
                owner=node.owners.get(pod, pod),
                node=node.name,
                slots=held.slots.get(main, 0),
                gpus=tuple(sorted(held.gpus)),
                memory_used_mib=held.memory_mib,
                processes=held.processes,
                idle_slots=idle_slots,
                idle_for_s=idle_s if idle_slots else None,
                pending=False,
                gpu_share=round(held.share, 3) if held.share else None,
                resource=main,
                slots_by_resource=tuple(sorted(held.slots.items())),
                dra_devices=tuple(sorted(held.dra_devices)),
            )
        )
    return found


def _pending_usages(pods: Iterable[PendingPod], resource: str) -> list[PodUsage]:
    """The pending pods that want the plugin's resource."""
    return [
        PodUsage(
            pod=pod.pod,
            namespace=pod.namespace,
            owner=pod.owner,
            node=None,
            slots=pod.slots[resource],
            gpus=(),
            memory_used_mib=0,
            processes=0,
            idle_slots=0,
            idle_for_s=None,
            pending=True,
        )
        for pod in pods
        if pod.slots.get(resource, 0) > 0
    ]


def usage_rows(
    usages: Iterable[PodUsage], by: UsageBy, *, resource: str = "nvidia.com/gpu"
) -> list[UsageRow]:
    """The pods added up per namespace, owner or node; most slots held first.

    `slots_held` counts `resource` only (the plugin's); every resource stays apart in
    `slots_by_resource`, so MIG slices never add into nvidia.com/gpu.
    """
    rows: dict[str, UsageRow] = {}
    distinct_gpus: dict[str, set[tuple[str, int]]] = defaultdict(set)
    devices: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for item in usages:
        key = {"namespace": item.namespace, "owner": item.owner, "node": item.node or "-"}[by]
        row = rows.setdefault(key, UsageRow(key))
        row.pod_names.append(item.pod)
        if item.pending:
            row.pending_pods += 1
            row.pending_slots += item.slots
            continue
        row.pods += 1
        for name, count in item.slots_by_resource:
            row.slots_by_resource[name] = row.slots_by_resource.get(name, 0) + count
        row.slots_held += dict(item.slots_by_resource).get(resource, 0)
        devices[key].update((item.node or "", device) for device in item.dra_devices)
        row.gpu_share = round(row.gpu_share + (item.gpu_share or 0.0), 3)
        row.memory_used_mib += item.memory_used_mib
        row.idle_slots += item.idle_slots
        distinct_gpus[key].update((item.node or "", index) for index in item.gpus)
    for key, row in rows.items():
        row.gpus = len(distinct_gpus[key])
        row.dra_devices = len(devices[key])  # distinct: pods sharing a device count it once
    return sorted(rows.values(), key=lambda row: (-row.slots_held, -row.pending_slots, row.key))
