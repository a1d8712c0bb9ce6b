"""Who holds the slots: usage per namespace, owner or node, with idle slots and pending demand.

Read from the snapshot (slots held, GPU processes, idle-slot findings) and the pod manifests
(owner, pending pods). Owner is the person a pod names with a `user` or `owner` label, else
its controller (`ReplicaSet/infer-7d9f`), else the pod itself; always inside its namespace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.domain.accounting.pods import pod_key, pod_node, pod_phase, read_pod
from app.domain.cluster import Manifest
from app.domain.snapshot import NodeState, Snapshot
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
    controller's name, else the pod's own name."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    labels = meta.get("labels") or {}
    for label in OWNER_LABELS:
        if labels.get(label):
            return f"{namespace}/{labels[label]}"
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{namespace}/{ref.get('name', '?')}"
    return f"{namespace}/{meta.get('name', '?')}"


def pod_usages(snapshot: Snapshot, pods: Sequence[Manifest]) -> list[PodUsage]:
    """Every pod holding slots (from the snapshot) or pending for the resource (manifests)."""
    manifests = {pod_key(pod): pod for pod in pods}
    idle = _idle_by_pod(snapshot)
    resource = snapshot.plugin.resource
    found = [
        usage
        for node in snapshot.nodes
        for usage in _holding_usages(node, manifests, idle, resource)
    ]
    found += _pending_usages(pods, snapshot.plugin.resource)
    return sorted(found, key=lambda item: (item.pending, item.pod))


def _idle_by_pod(snapshot: Snapshot) -> dict[str, tuple[int, int]]:
    """Idle slots and the longest idle seconds per pod, from the slot-held-idle findings."""
    idle: dict[str, tuple[int, int]] = {}
    for item in snapshot.findings:
        if item.code == "slot-held-idle" and item.pod is not None:
            slots = item.evidence.get("held_slots")
            seconds = item.evidence.get("idle_for_s")
            before = idle.get(item.pod, (0, 0))
            idle[item.pod] = (
                before[0] + (slots if isinstance(slots, int) else 0),
                max(before[1], seconds if isinstance(seconds, int) else 0),
            )
    return idle


def _holding_usages(
    node: NodeState,
    manifests: Mapping[str, Manifest],
    idle: Mapping[str, tuple[int, int]],
    resource: str,
) -> list[PodUsage]:
    """The pods holding slots, DRA devices or a GPU share on one node."""
    seen = held_on_node(node)
    found = []
    for pod, held in sorted(seen.items()):
        if not (held.slots or held.dra_devices or held.share):
            continue
        manifest = manifests.get(pod, {"metadata": _meta_of(pod)})
        idle_slots, idle_s = idle.get(pod, (0, 0))
        main = resource if resource in held.slots else next(iter(sorted(held.slots)), resource)
        found.append(
            PodUsage(
                pod=pod,
                namespace=pod.partition("/")[0],
                owner=owner_of(manifest),
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


def _pending_usages(pods: Sequence[Manifest], resource: str) -> list[PodUsage]:
    """Unscheduled pods waiting for the plugin's resource.

    Each is read by read_pod(), the one parse step for pods, bound or pending: a pod whose
    request cannot be counted ("1Ei", 20 digits) is set aside there (the engine's
    `object-set-aside` finding names it) and wants nothing here.
    """
    found = []
    for pod in pods:
        if pod_node(pod) is not None or pod_phase(pod) != "Pending":
            continue
        facts = read_pod(pod)
        want = facts.slots.get(resource, 0)
        if facts.set_aside is not None or want <= 0:
            continue
        found.append(
            PodUsage(
                pod=facts.key,
                namespace=facts.namespace,
                owner=owner_of(pod),
                node=None,
                slots=want,
                gpus=(),
                memory_used_mib=0,
                processes=0,
                idle_slots=0,
                idle_for_s=None,
                pending=True,
            )
        )
    return found


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


def _meta_of(key: str) -> Manifest:
    namespace, _, name = key.partition("/")
    return {"namespace": namespace, "name": name}
