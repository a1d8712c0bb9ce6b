"""What each pod holds on a node: slots per resource, DRA devices, and its share of GPUs.

A pod's GPU share adds up what it holds in units of whole GPUs: a slot of a GPU with four
time-sliced replicas is 0.25, a whole GPU's slot 1, a MIG slice its profile's share of the
GPU (`3g.40gb`: 3/7), a DRA device the GPU (or MIG slice) it is, split between the pods
whose claims share it, a KAI / Run:ai fraction its annotated share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.domain.snapshot import GpuState, NodeState

MIG_SLICES = 7  # compute slices of an A100/H100/H200 (a `7g` profile is the whole GPU)
_TERMINAL = ("Succeeded", "Failed")
_PROFILE = re.compile(r"^(\d+)g\.")


@dataclass
class Held:
    slots: dict[str, int] = field(default_factory=dict)
    dra_devices: set[str] = field(default_factory=set)  # "<gpu index>/<device>"
    share: float = 0.0
    gpus: set[int] = field(default_factory=set)
    memory_mib: int = 0
    processes: int = 0


def profile_share(profile: str | None) -> float:
    """A MIG profile's share of its GPU (`1g.10gb`: 1/7); 1.0 when not a MIG profile."""
    found = _PROFILE.match(profile or "")
    return min(int(found[1]) / MIG_SLICES, 1.0) if found else 1.0


def held_on_node(node: NodeState) -> dict[str, Held]:
    """Per pod (namespace/name): what it holds on this node."""
    found: dict[str, Held] = {}
    for pod in node.pods:
        if pod.phase in _TERMINAL:
            continue
        held = found.setdefault(pod.pod, Held())
        if pod.slots > 0:
            held.slots[pod.resource] = held.slots.get(pod.resource, 0) + pod.slots
        if pod.share:
            held.share += pod.share
    for gpu in node.gpus:
        _processes(gpu, found)
        if gpu.mig_devices:
            _mig_shares(gpu, found)
        else:
            _gpu_shares(gpu, found)
    return found


def _holds_slots(found: dict[str, Held], pod: str) -> bool:
    """A device-plugin holder counts only for a pod the ledger has holding slots."""
    held = found.get(pod)
    return held is not None and bool(held.slots)


def _processes(gpu: GpuState, found: dict[str, Held]) -> None:
    for process in gpu.processes:
        if process.pod and process.pod in found:
            found[process.pod].memory_mib += process.used_memory_mib or 0
            found[process.pod].processes += 1


def _gpu_shares(gpu: GpuState, found: dict[str, Held]) -> None:
    sharing: dict[str, int] = {}
    for holder in gpu.holders:
        if holder.source == "dra":
            sharing[holder.device or ""] = sharing.get(holder.device or "", 0) + 1
    profiles = {device.name: device.profile for device in gpu.dra_devices}
    for holder in gpu.holders:
        if holder.source == "fraction":
            if holder.pod in found:  # its share comes with the pod (PodSlots.share)
                found[holder.pod].gpus.add(gpu.index)
            continue
        if holder.source != "dra" and not _holds_slots(found, holder.pod):
            continue
        held = found.setdefault(holder.pod, Held())
        held.gpus.add(gpu.index)
        if holder.source == "dra":
            held.dra_devices.add(f"{gpu.index}/{holder.device or ''}")
            share = profile_share(profiles.get(holder.device or ""))
            held.share += share / max(sharing.get(holder.device or "", 1), 1)
        elif gpu.slots > 0:
            held.share += holder.slots / gpu.slots


def _mig_shares(gpu: GpuState, found: dict[str, Held]) -> None:
    for device in gpu.mig_devices:
        for holder in device.holders:
            if not _holds_slots(found, holder.pod):
                continue
            held = found[holder.pod]
            held.gpus.add(gpu.index)
            held.share += profile_share(device.profile) * holder.slots / max(device.slots, 1)
