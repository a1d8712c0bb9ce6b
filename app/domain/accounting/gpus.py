"""Per-GPU facts: which GPUs the plugin sees, who holds their slots, whose memory is on them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from app.domain.accounting.pods import pod_key

if TYPE_CHECKING:
    from app.domain.accounting.ledger import MigFacts
from app.domain.cluster import Manifest
from app.domain.report import GpuReading, MigDeviceReading
from app.domain.snapshot import GpuProcess, PodSlots, SlotHolder

Role = Literal["advertised", "dra", "host", "failing", "unknown"]
Handler = Literal["device-plugin", "dra"]  # who hands a GPU out to pods
_NO_GPUS = ("", "none", "void")


@dataclass(frozen=True)
class Visibility:
    """NVIDIA_VISIBLE_DEVICES of the plugin resolved against a node's GPUs."""

    uuids: frozenset[str]
    restricted: bool
    listed: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()
    by_index: bool = False


@dataclass
class GpuFacts:
    reading: GpuReading
    role: Role
    slots: int
    holders: list[SlotHolder] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    memory_pods_mib: int = 0
    memory_host_mib: int = 0
    mig_devices: list[MigFacts] = field(default_factory=list)  # under a MIG strategy

    @property
    def uuid(self) -> str:
        return self.reading.uuid

    @property
    def handed_by(self) -> tuple[Handler, ...]:
        """The plugin when it advertises the GPU, DRA when a driver publishes or a claim holds it.

        Both on a node that runs the two (the GPU is then counted twice).
        """
        plugin: tuple[Handler, ...] = ("device-plugin",) if self.role == "advertised" else ()
        dra = self.role == "dra" or any(h.source == "dra" for h in self.holders)
        return (*plugin, "dra") if dra else plugin


def listed_devices(value: str | None) -> tuple[str, ...]:
    """The items of an NVIDIA_VISIBLE_DEVICES value that restricts (empty for all/none)."""
    if value is None or value.strip().lower() in ("all", *_NO_GPUS):
        return ()
    return tuple(item.strip() for item in value.split(",") if item.strip())


def resolve_visibility(value: str | None, gpus: Sequence[GpuReading]) -> Visibility:
    """Which of these GPUs the plugin sees: unset or all means every GPU."""
    everyone = frozenset(g.uuid for g in gpus)
    if value is None or value.strip().lower() == "all":
        return Visibility(uuids=everyone, restricted=False)
    if value.strip().lower() in _NO_GPUS:
        return Visibility(uuids=frozenset(), restricted=True)
    items = listed_devices(value)
    by_uuid = {g.uuid.lower(): g.uuid for g in gpus}
    by_index = {str(g.index): g.uuid for g in gpus}
    seen: set[str] = set()
    unmatched: list[str] = []
    for item in items:
        uuid = by_index.get(item) if item.isdigit() else by_uuid.get(item.lower())
        if uuid is None:
            unmatched.append(item)
        else:
            seen.add(uuid)
    return Visibility(
        uuids=frozenset(seen),
        restricted=True,
        listed=items,
        unmatched=tuple(unmatched),
        by_index=any(item.isdigit() for item in items),
    )


def gpu_processes(
    reading: GpuReading | MigDeviceReading, pods_by_uid: Mapping[str, Manifest]
) -> tuple[list[GpuProcess], int, int]:
    """A GPU's processes with their owners, and the MiB held by pods and by everything else."""
    processes: list[GpuProcess] = []
    pods_mib = host_mib = 0
    for proc in reading.processes:
        memory = proc.used_memory_mib or 0
        pod = pods_by_uid.get(proc.pod_uid) if proc.pod_uid else None
        if proc.pod_uid:
            owner: Literal["pod", "host", "unknown"] = "pod"
            pods_mib += memory
        else:
            owner = "host" if proc.visible else "unknown"
            host_mib += memory
        processes.append(
            GpuProcess(
                pid=proc.pid,
                used_memory_mib=proc.used_memory_mib,
                owner=owner,
                pod=pod_key(pod) if pod is not None else None,
                pod_uid=proc.pod_uid,
                container=proc.container,
                command=proc.command,
                user=proc.user,
            )
        )
    return processes, pods_mib, host_mib


def inferred_holders(
    gpus: Sequence[GpuFacts], pods: Sequence[PodSlots]
) -> dict[str, dict[str, int]]:
    """Guess who holds which slots: a pod with processes on a GPU first, the rest by index."""
    advertised = [g for g in gpus if g.role == "advertised"]
    free = {g.uuid: g.slots for g in advertised}
    held: dict[str, dict[str, int]] = {g.uuid: {} for g in advertised}
    on_gpu: dict[str, list[str]] = {}
    for gpu in advertised:
        for proc in gpu.reading.processes:
            if proc.pod_uid and gpu.uuid not in on_gpu.get(proc.pod_uid, []):
                on_gpu.setdefault(proc.pod_uid, []).append(gpu.uuid)
    remaining: list[tuple[str, int]] = []
    for pod in sorted(pods, key=lambda p: p.pod):
        left = pod.slots
        for uuid in on_gpu.get(pod.uid, []):
            if left and free[uuid] > 0:
                free[uuid] -= 1
                held[uuid][pod.pod] = held[uuid].get(pod.pod, 0) + 1
                left -= 1
        remaining.append((pod.pod, left))
    cursor = 0
    for key, left in remaining:
        while left and cursor < len(advertised):
            uuid = advertised[cursor].uuid
            take = min(left, free[uuid])
            if take:
                free[uuid] -= take
                held[uuid][key] = held[uuid].get(key, 0) + take
                left -= take
            if free[uuid] == 0:
                cursor += 1
    return held


def holder_list(per_pod: Mapping[str, int], *, assigned: bool) -> list[SlotHolder]:
    return [
        SlotHolder(pod=pod, slots=slots, assigned=assigned)
        for pod, slots in sorted(per_pod.items())
    ]
