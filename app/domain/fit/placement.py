"""Which GPUs a node would most likely hand a pod: its free devices, in the plugin's order.

The device plugin answers the kubelet's GetPreferredAllocation: whole GPUs and MIG devices
in order (no topology is known here, so by index), time-sliced replicas by the
`sharedDevicesAllocationPolicy`: `distributed` takes the GPU with the fewest replicas held
first, `packed` the one with the most that still has a free replica. A DRA driver's
extended resource is served by free whole-GPU devices. Each candidate carries its GPU's free
memory from the agent's report, so a wish for a model or for free memory can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.snapshot import GpuState, NodeState

PACKED = "packed"


@dataclass(frozen=True)
class Candidate:
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
    """The node's devices with free slots of `resource` (device plugin), in index order."""
    found: list[Candidate] = []
    for gpu in node.gpus:
        if gpu.role != "advertised":
            continue
        if resource.startswith("nvidia.com/mig-"):
            found.extend(
                Candidate(mig.uuid, mig.slots - mig.held_slots, mig.held_slots, gpu)
                for mig in gpu.mig_devices
                if mig.resource == resource and mig.slots > mig.held_slots
            )
        elif resource == node.resource and not gpu.mig_devices and gpu.slots > gpu.held_slots:
            found.append(Candidate(gpu.uuid, gpu.slots - gpu.held_slots, gpu.held_slots, gpu))
    return found


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
    free = {c.uuid: c.free for c in candidates}
    held = {c.uuid: c.held for c in candidates}
    order = [c.uuid for c in candidates]
    picked: list[str] = []
    for _ in range(count):
        open_ = [uuid for uuid in order if free[uuid] > 0]
        if not open_:
            break
        if policy == PACKED:
            uuid = max(open_, key=lambda u: held[u])  # the first of the fullest
        else:
            uuid = min(open_, key=lambda u: held[u])  # the first of the emptiest
        free[uuid] -= 1
        held[uuid] += 1
        if uuid not in picked:
            picked.append(uuid)
    return picked
