"""GPU fractions in the ledger: who holds a share of which GPU (see accounting/fractions.py).

A fraction pod is placed on the GPU its KAI reservation pod names (the pod and the
reservation share a `runai-gpu-group`), else on the GPUs its processes run on. It holds no
slot: its holder has `slots` 0, `source` fraction and its share. The reservation pod's own
slot holder is tagged with the group, so its slot is seen as used by the group's pods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from app.domain.accounting.ledger.models import GpuFacts
from app.domain.accounting.pods import PodFacts
from app.domain.snapshot import PodSlots, SlotHolder

Placement = Literal["reservation", "process"]


def _reservations(pods: Sequence[PodFacts]) -> tuple[dict[str, str], dict[str, str]]:
    """GPU UUID per KAI GPU group, and the group per reservation pod (namespace/name)."""
    by_group: dict[str, str] = {}
    by_pod: dict[str, str] = {}
    for pod in pods:
        if pod.reserved_gpu is None:
            continue
        for group in pod.gpu_groups:
            by_group[group] = pod.reserved_gpu
            by_pod[pod.key] = group
    return by_group, by_pod


def _placements(
    pod: PodFacts, reserved: dict[str, str], whole: dict[str, GpuFacts]
) -> dict[str, tuple[Placement, str | None]]:
    """The GPUs a fraction pod shares: how each is known, and through which group."""
    placed: dict[str, tuple[Placement, str | None]] = {}
    for group in pod.gpu_groups:
        uuid = reserved.get(group)
        if uuid is not None and uuid in whole:
            placed[uuid] = ("reservation", group)
    first = pod.gpu_groups[0] if pod.gpu_groups else None
    for uuid, gpu in whole.items():
        if uuid not in placed and any(p.pod_uid == pod.uid for p in gpu.reading.processes):
            placed[uuid] = ("process", first)
    return placed


def add_fraction_holders(gpus: list[GpuFacts], pods: Sequence[PodFacts]) -> list[PodSlots]:
    """Put the node's fraction pods on their GPUs; return them as the node's pods (slots 0)."""
    whole = {g.uuid: g for g in gpus if not g.mig_devices}
    reserved, reservers = _reservations(pods)
    found: list[PodSlots] = []
    for pod in pods:
        fraction = pod.fraction
        if fraction is None:
            continue
        shares: list[float | None] = []
        for uuid, (how, group) in sorted(_placements(pod, reserved, whole).items()):
            gpu = whole[uuid]
            total = gpu.reading.memory_total_mib
            shares.append(fraction.share(total))
            gpu.holders.append(
                SlotHolder(
                    pod=pod.key,
                    slots=0,
                    assigned=False,
                    assignment=how,
                    resource=fraction.annotation,
                    source="fraction",
                    share=fraction.share(total),
                    memory_limit_mib=fraction.limit(total),
                    gpu_group=group,
                )
            )
        if not shares and fraction.portion is not None:
            # capped at the GPUs the node holds: a share is never above the GPUs that exist
            shares = [fraction.portion] * min(fraction.devices, max(len(gpus), 1))
        known = [s for s in shares if s is not None]
        found.append(
            PodSlots(
                pod=pod.key,
                uid=pod.uid,
                phase=pod.phase,
                slots=0,
                resource=fraction.annotation,
                share=round(sum(known), 3) if known and len(known) == len(shares) else None,
            )
        )
    if reservers:
        for gpu in gpus:
            gpu.holders = [_tagged(h, reservers) for h in gpu.holders]
    return found


def _tagged(holder: SlotHolder, reservers: dict[str, str]) -> SlotHolder:
    group = reservers.get(holder.pod)
    if group is None or holder.source != "device-plugin":
        return holder
    return holder.model_copy(update={"gpu_group": group})
