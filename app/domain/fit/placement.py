"""Which GPUs a node would most likely hand a pod: its free devices, in the plugin's order.

The device plugin answers the kubelet's GetPreferredAllocation: whole GPUs and MIG devices
in order (no topology is known here, so by index), time-sliced replicas by the
`sharedDevicesAllocationPolicy`: `distributed` takes the GPU with the fewest replicas held
first, `packed` the one with the most that still has a free replica. A DRA driver's
extended resource is served by free whole-GPU devices. Each candidate carries its GPU's free
memory from the agent's report, so a wish for a model or for free memory can be checked.
"""

from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

from app.domain.snapshot import GpuState, NodeState

PACKED = "packed"
_HELD = itemgetter(2)  # Candidate.held, read in C
MAX_KEPT_NODES = 100_000


class Candidate(NamedTuple):
    """One device that could serve a slot: its UUID, free slots, and its GPU's reading."""

    uuid: str
    free: int
    held: int
    gpu: GpuState | None  # the physical GPU (a MIG device's parent); None: not reported


def free_memory_mib(gpu: GpuState | None) -> int | None:
    """Memory nobody uses on the GPU, from the agent's report; None when not known."""
    if gpu is None or gpu.memory_total_mib is None or gpu.memory_used_mib is None:
        return None
    return max(gpu.memory_total_mib - gpu.memory_used_mib, 0)


def slot_candidates(node: NodeState, resource: str) -> list[Candidate]:
    """The node's devices with free slots of `resource` (device plugin), in index order.

    The one pass over every GPU of every fitting node: kept to a comprehension."""
    if resource.startswith("nvidia.com/mig-"):
        return [
            Candidate(mig.uuid, mig.slots - mig.held_slots, mig.held_slots, gpu)
            for gpu in node.gpus
            if gpu.role == "advertised"
            for mig in gpu.mig_devices
            if mig.resource == resource and mig.slots > mig.held_slots
        ]
    if resource != node.resource:
        return []
    return [
        Candidate(gpu.uuid, gpu.slots - gpu.held_slots, gpu.held_slots, gpu)
        for gpu in node.gpus
        if gpu.slots > gpu.held_slots and gpu.role == "advertised" and not gpu.mig_devices
    ]


def dra_candidates(node: NodeState) -> list[Candidate]:
    """Whole-GPU DRA devices no claim holds (what an extended resource's claim is given)."""
    by_uuid = {gpu.uuid: gpu for gpu in node.gpus}
    devices = [d for gpu in node.gpus for d in gpu.dra_devices] + list(node.dra_devices)
    return [
        Candidate(d.uuid or d.name, 1, 0, by_uuid.get(d.uuid or ""))
        for d in devices
        if d.type == "gpu" and not d.claims
    ]


def chosen_uuids(candidates: list[Candidate], count: int, *, policy: str | None) -> list[str]:
    """The devices `count` slots would most likely land on, each UUID once, in pick order."""
    if not candidates:
        return []
    if count == 1:  # the common question, without the bookkeeping
        pick = max if policy == PACKED else min
        return [pick(candidates, key=_HELD).uuid]
    free = {c.uuid: c.free for c in candidates}
    held = {c.uuid: c.held for c in candidates}
    order = [c.uuid for c in candidates]
    picked: list[str] = []
    for _ in range(count):
        open_ = [uuid for uuid in order if free[uuid] > 0]
        if not open_:
            break
        if policy == PACKED:
            uuid = max(open_, key=held.__getitem__)  # the first of the fullest
        else:
            uuid = min(open_, key=held.__getitem__)  # the first of the emptiest
        free[uuid] -= 1
        held[uuid] += 1
        if uuid not in picked:
            picked.append(uuid)
    return picked


class CandidateMemo:
    """Each node's free devices of its own resource, kept while its node state is the very
    same object (the engine replaces a node's state only when something of it changed), so
    a question costs a pass over the GPUs of the nodes that changed since the last one."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[NodeState, list[Candidate]]] = {}

    def of(self, node: NodeState) -> list[Candidate]:
        kept = self._kept.get(node.name)
        if kept is not None and kept[0] is node:
            return kept[1]
        found = slot_candidates(node, node.resource)
        if len(self._kept) > MAX_KEPT_NODES:
            self._kept = {}  # nodes come and go: start again rather than grow
        self._kept[node.name] = (node, found)
        return found
