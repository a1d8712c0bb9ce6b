"""Who holds each GPU's and MIG device's slots: the kubelet's word when the agent reports it.

The holders come from the kubelet (the agent's PodResources reading) when known, inferred
from pod requests otherwise (a pod with processes on a GPU first, the rest by index).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.domain.accounting.ledger.devices import uses_mig
from app.domain.accounting.ledger.models import GpuFacts, MigFacts
from app.domain.accounting.pods import PodFacts
from app.domain.plugin.effective import EffectiveConfig
from app.domain.report import DeviceAssignment, ReceivedReport
from app.domain.snapshot import PodSlots, SlotHolder


def held_by_resource(
    pods: list[PodFacts], slots_by_uid: Mapping[str, Mapping[str, int]]
) -> dict[str, list[PodSlots]]:
    """The pods holding each nvidia.com/ resource on the node, by pod name."""
    held: dict[str, list[PodSlots]] = {}
    for pod in pods:
        for resource, count in slots_by_uid.get(pod.uid, {}).items():
            if count:
                held.setdefault(resource, []).append(
                    PodSlots(
                        pod=pod.key, uid=pod.uid, phase=pod.phase, slots=count, resource=resource
                    )
                )
    for group in held.values():
        group.sort(key=lambda p: p.pod)
    return held


def every_holder(held: Mapping[str, list[PodSlots]]) -> list[PodSlots]:
    """The node's pods holding any of its GPU resources (MIG slices too), by pod, then resource.

    `requested` and `free` stay the node's own resource's; this is who holds the GPUs.
    """
    return sorted((p for group in held.values() for p in group), key=lambda p: (p.pod, p.resource))


def fill_holders(
    gpus: list[GpuFacts],
    held: Mapping[str, list[PodSlots]],
    received: ReceivedReport | None,
    resource: str,
    config: EffectiveConfig,
) -> None:
    """Holders of every GPU and MIG device: the kubelet's when reported, else inferred."""
    assignments = received.report.assignments if received is not None else None
    devices = [d for g in gpus for d in g.mig_devices]
    whole = [g for g in gpus if not uses_mig(g, config)]
    if assignments is not None:
        by_uuid: dict[str, list[SlotHolder]] = {}
        for name in sorted({a.resource for a in assignments}):
            # only pods that hold a slot of the resource are its holders (a pod reaching a
            # GPU through NVIDIA_VISIBLE_DEVICES alone holds none, whatever is reported)
            holding = {p.pod for p in held.get(name, []) if p.slots > 0}
            for uuid, holders in kubelet_holders(assignments, name).items():
                by_uuid.setdefault(uuid, []).extend(h for h in holders if h.pod in holding)
        for gpu in gpus:
            gpu.holders = by_uuid.get(gpu.uuid, [])
        for device in devices:
            device.holders = by_uuid.get(device.uuid, [])
    else:
        inferred = inferred_holders(whole, held.get(resource, []))
        for gpu in whole:
            gpu.holders = holder_list(inferred.get(gpu.uuid, {}), assigned=False)
        infer_mig_holders(devices, [p for group in held.values() for p in group])
    for gpu in gpus:
        if gpu.mig_devices:
            gpu.holders = [h for d in gpu.mig_devices for h in d.holders]


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
