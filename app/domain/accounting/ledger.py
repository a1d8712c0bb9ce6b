"""The per-GPU ledger: which resource each physical GPU (or MIG device on it) gives, who holds it.

Every GPU resource a node advertises is accounted on its own (`nvidia.com/gpu`, `.shared`,
`nvidia.com/mig-<profile>`); the slots of a resource belong to physical GPUs or to MIG
devices under their parent, and their holders come from the kubelet (via the agent's
PodResources reading) when known, inferred from pod requests otherwise. A holder carries
its `source` so other ways of handing out a GPU (DRA) can land in the same ledger.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.domain.accounting.gpus import gpu_processes
from app.domain.accounting.pods import parse_count
from app.domain.cluster import Manifest
from app.domain.plugin.config import PluginConfig
from app.domain.plugin.daemonset import Version
from app.domain.report import DeviceAssignment, MigDeviceReading
from app.domain.snapshot import GpuProcess, PodSlots, ResourceState, SlotHolder

NVIDIA_PREFIX = "nvidia.com/"
GPU_FAMILY = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
ANCHORED_MIG_PATTERNS = (0, 20, 0)  # v0.20.0 anchors MIG patterns (-me / +gfx profiles)
_BASE_PROFILE = re.compile(r"(\d+g\.\d+gb)")
_SAME_SLICES = re.compile(r"^\d+g\.\d+gb([+-].*)?$")


@dataclass
class MigFacts:
    """One MIG device: the resource it is advertised under, its slots and holders."""

    reading: MigDeviceReading
    parent_uuid: str
    resource: str | None
    slots: int
    holders: list[SlotHolder] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)

    @property
    def uuid(self) -> str:
        return self.reading.uuid


def mig_resource_name(profile: str, version: Version | None) -> str | None:
    """The resource a MIG profile is advertised under by the mixed strategy.

    v0.20.0+ matches profile patterns exactly: `1g.10gb+me` -> `nvidia.com/mig-1g.10gb.me`.
    Earlier releases match unanchored, so a suffixed profile falls into its base profile's
    resource (`nvidia.com/mig-1g.10gb`). Only profiles whose compute slices equal their
    GPU slices get a pattern at all (`1c.2g.20gb` has none in v0.20).
    """
    if version is not None and version >= ANCHORED_MIG_PATTERNS:
        if not _SAME_SLICES.match(profile):
            return None
        return MIG_PREFIX + profile.replace("+", ".")
    match = _BASE_PROFILE.search(profile)
    return MIG_PREFIX + match[1] if match else None


def shared_name(config: PluginConfig, name: str) -> tuple[str, int]:
    """The advertised name and replicas of a base resource under the config's sharing."""
    for entry in config.sharing_resources:
        if entry.name == name:
            return (f"{name}.shared" if config.rename_by_default else name), entry.replicas
    return name, 1


def mig_facts(
    parent_uuid: str,
    devices: Sequence[MigDeviceReading],
    *,
    config: PluginConfig,
    version: Version | None,
    pods_by_uid: Mapping[str, Manifest],
) -> list[MigFacts]:
    """The MIG devices of one advertised MIG-enabled GPU under the config's MIG strategy."""
    found = []
    for device in devices:
        resource: str | None
        if config.mig_strategy == "single":
            resource, slots = shared_name(config, GPU_FAMILY)
        elif config.mig_strategy == "mixed":
            base = mig_resource_name(device.profile, version)
            resource, slots = shared_name(config, base) if base else (None, 0)
        else:
            resource, slots = None, 0
        processes, _, _ = gpu_processes(device, pods_by_uid)
        found.append(
            MigFacts(
                reading=device,
                parent_uuid=parent_uuid,
                resource=resource,
                slots=slots,
                processes=processes,
            )
        )
    return found


def gpu_resource_counts(node: Manifest, field_name: str) -> dict[str, int]:
    """status.capacity / status.allocatable of every nvidia.com/ resource."""
    values = (node.get("status") or {}).get(field_name) or {}
    return {
        str(name): parse_count(value, field=f"status.{field_name}.{name}")
        for name, value in values.items()
        if str(name).startswith(NVIDIA_PREFIX)
    }


def node_resources(
    node: Manifest,
    requested: Mapping[str, int],
    *,
    schedulable: bool,
) -> dict[str, ResourceState]:
    """Every GPU resource the node advertises or its pods hold, with free and stranded."""
    capacity = gpu_resource_counts(node, "capacity")
    allocatable = gpu_resource_counts(node, "allocatable")
    names = {n for n in (*capacity, *allocatable) if capacity.get(n) or allocatable.get(n)}
    names |= {n for n, count in requested.items() if count}
    resources = {}
    for name in sorted(names):
        alloc = allocatable.get(name, 0)
        held = requested.get(name, 0)
        spare = max(alloc - held, 0)
        resources[name] = ResourceState(
            allocatable=alloc,
            requested=held,
            free=spare if schedulable else 0,
            stranded=0 if schedulable else spare,
        )
    return resources


def sum_resources(per_node: Sequence[Mapping[str, ResourceState]]) -> dict[str, ResourceState]:
    """Cluster totals per resource: a sum of the per-node figures (each never negative)."""
    totals: dict[str, list[int]] = {}
    for resources in per_node:
        for name, state in resources.items():
            row = totals.setdefault(name, [0, 0, 0, 0])
            row[0] += state.allocatable
            row[1] += state.requested
            row[2] += state.free
            row[3] += state.stranded
    return {
        name: ResourceState(allocatable=a, requested=r, free=f, stranded=s)
        for name, (a, r, f, s) in sorted(totals.items())
    }


def kubelet_holders(
    assignments: Sequence[DeviceAssignment], resource: str
) -> dict[str, list[SlotHolder]]:
    """Holders per device UUID (GPU-... or MIG-...) from the kubelet's assignments.

    Time-sliced replica ids `<UUID>::<n>` are resolved to their device; each id is a slot.
    """
    per_device: dict[str, dict[tuple[str, str], list[int]]] = {}
    for item in assignments:
        if item.resource != resource:
            continue
        for device in item.device_ids:
            uuid, _, replica = device.partition("::")
            slots = per_device.setdefault(uuid, {}).setdefault(
                (f"{item.namespace}/{item.pod}", item.container), []
            )
            slots.append(int(replica) if replica.isdigit() else -1)
    return {
        uuid: [
            SlotHolder(
                pod=pod,
                slots=len(replicas),
                assigned=True,
                assignment="kubelet",
                resource=resource,
                container=container,
                replicas=sorted(r for r in replicas if r >= 0),
            )
            for (pod, container), replicas in sorted(by_pod.items())
        ]
        for uuid, by_pod in per_device.items()
    }


def infer_mig_holders(devices: Sequence[MigFacts], pods: Sequence[PodSlots]) -> None:
    """Place each pod's slots of a MIG resource on that resource's devices, in device order.

    A pod with processes on a device is placed there first, as for whole GPUs.
    """
    by_resource: dict[str, list[MigFacts]] = {}
    for device in devices:
        if device.resource is not None and device.slots:
            by_resource.setdefault(device.resource, []).append(device)
    for resource, group in by_resource.items():
        free = {d.uuid: d.slots for d in group}
        held: dict[str, dict[str, int]] = {d.uuid: {} for d in group}
        wanting = sorted((p for p in pods if p.resource == resource), key=lambda p: p.pod)
        left = {p.pod: p.slots for p in wanting}
        for pod in wanting:
            for device in group:
                on_it = any(proc.pod_uid == pod.uid for proc in device.reading.processes)
                if on_it and left[pod.pod] and free[device.uuid]:
                    free[device.uuid] -= 1
                    held[device.uuid][pod.pod] = held[device.uuid].get(pod.pod, 0) + 1
                    left[pod.pod] -= 1
        for pod in wanting:
            for device in group:
                take = min(left[pod.pod], free[device.uuid])
                if take:
                    free[device.uuid] -= take
                    held[device.uuid][pod.pod] = held[device.uuid].get(pod.pod, 0) + take
                    left[pod.pod] -= take
        for device in group:
            device.holders = [
                SlotHolder(pod=pod, slots=slots, assigned=False, resource=resource)
                for pod, slots in sorted(held[device.uuid].items())
            ]
