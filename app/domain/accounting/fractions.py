"""GPU fractions (KAI scheduler, Run:ai): pods that hold a share of one GPU without a slot.

Such a pod requests no `nvidia.com/gpu`; it carries `gpu-fraction: "0.5"` (a share of the
GPU's memory), `gpu-memory: "2000"` (MiB) or, in newer releases, per-container
`nvidia.com/container.<name>.gpu-memory.request` / `.limit` quantities. KAI's binder
reserves the GPU with a reservation pod (namespace `kai-resource-reservation`, formerly
`runai-reservation`) that requests one `nvidia.com/gpu`, carries the GPU's UUID in the
annotation `run.ai/reserve_for_gpu_index` and the label `runai-gpu-group`, which the
fraction pods on that GPU carry too. KAI isolates no memory: a pod that allocates past its
share takes it from the others. Values KAI's admission would refuse are not fractions here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.domain.bounds import MAX_COUNT, MAX_MIB, OutOfBounds, number_text
from app.domain.quantity import QuantityError, quantity_count

FRACTION_ANNOTATION = "gpu-fraction"
MEMORY_ANNOTATION = "gpu-memory"  # MiB
DEVICES_ANNOTATION = "gpu-fraction-num-devices"
CONTAINER_PREFIX = "nvidia.com/container."
CONTAINER_REQUEST = ".gpu-memory.request"
CONTAINER_LIMIT = ".gpu-memory.limit"
GPU_GROUP_LABEL = "runai-gpu-group"
RESERVED_GPU_ANNOTATION = "run.ai/reserve_for_gpu_index"  # holds a UUID despite its name
RESERVATION_NAMESPACES = ("kai-resource-reservation", "runai-reservation")
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class GpuFraction:
    """What a pod asks of each GPU it shares: a portion, or MiB (requested and limit)."""

    annotation: str  # the annotation it was read from
    portion: float | None = None  # 0 < portion <= 1, of the GPU's memory
    memory_mib: int | None = None
    limit_mib: int | None = None
    devices: int = 1

    def share(self, memory_total_mib: int | None) -> float | None:
        """The share of a GPU of `memory_total_mib` (None: MiB asked, total unknown)."""
        if self.portion is not None:
            return self.portion
        if self.memory_mib is None or not memory_total_mib:
            return None
        return round(self.memory_mib / memory_total_mib, 3)

    def limit(self, memory_total_mib: int | None) -> int | None:
        """The MiB the pod may use on a GPU of `memory_total_mib` (None: not known)."""
        if self.limit_mib is not None:
            return self.limit_mib
        if self.memory_mib is not None:
            return self.memory_mib
        if self.portion is not None and memory_total_mib:
            return int(self.portion * memory_total_mib)
        return None


def quantity_mib(value: Any) -> int | None:
    """A Kubernetes quantity (`2Gi`, `2048Mi`, `2G`, bytes) in whole MiB, read as the API
    server reads it (`domain/quantity`); None if it is none, or less than 1 MiB."""
    try:
        mib = quantity_count(value) // _MIB
    except QuantityError:
        return None
    return mib if mib > 0 else None


def _positive_int(value: Any) -> int | None:
    text = str(value).strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def _portion(value: Any) -> float | None:
    try:
        portion = float(str(value).strip())
    except ValueError:
        return None
    return portion if 0 < portion <= 1 else None


def _container_fraction(annotations: Mapping[str, Any]) -> GpuFraction | None:
    """The per-container request/limit annotations (the first container named, by name)."""
    named = sorted(
        key
        for key in annotations
        if key.startswith(CONTAINER_PREFIX) and key.endswith((CONTAINER_REQUEST, CONTAINER_LIMIT))
    )
    if not named:
        return None
    container = named[0][len(CONTAINER_PREFIX) :].rsplit(".gpu-memory.", 1)[0]
    base = CONTAINER_PREFIX + container
    request = quantity_mib(annotations.get(base + CONTAINER_REQUEST, ""))
    limit = quantity_mib(annotations.get(base + CONTAINER_LIMIT, ""))
    if request is None and limit is None:
        return None
    return GpuFraction(
        annotation=base + (CONTAINER_REQUEST if request is not None else CONTAINER_LIMIT),
        memory_mib=request if request is not None else limit,
        limit_mib=limit,
    )


def read_fraction(annotations: Mapping[str, Any]) -> GpuFraction | None:
    """The fraction a pod's annotations ask for; None when they ask for none (or a bad one)."""
    devices = _positive_int(annotations.get(DEVICES_ANNOTATION, "1")) or 1
    found = _container_fraction(annotations)
    if found is None and FRACTION_ANNOTATION in annotations:
        portion = _portion(annotations[FRACTION_ANNOTATION])
        found = GpuFraction(FRACTION_ANNOTATION, portion=portion) if portion else None
    elif found is None and MEMORY_ANNOTATION in annotations:
        mib = _positive_int(annotations[MEMORY_ANNOTATION])
        found = GpuFraction(MEMORY_ANNOTATION, memory_mib=mib) if mib else None
    if found is None:
        return None
    return GpuFraction(
        found.annotation, found.portion, found.memory_mib, found.limit_mib, devices=devices
    )


def gpu_groups(labels: Mapping[str, Any]) -> tuple[str, ...]:
    """The KAI GPU groups a pod belongs to (`runai-gpu-group`, `runai-gpu-group/<g>`)."""
    groups = {
        str(value)
        for key, value in labels.items()
        if key == GPU_GROUP_LABEL or key.startswith(GPU_GROUP_LABEL + "/")
    }
    return tuple(sorted(g for g in groups if g))


def reserved_gpu(namespace: str, annotations: Mapping[str, Any]) -> str | None:
    """The GPU UUID a KAI reservation pod holds for its group; None for other pods."""
    value = str(annotations.get(RESERVED_GPU_ANNOTATION, "")).strip()
    if namespace not in RESERVATION_NAMESPACES or not value.upper().startswith("GPU-"):
        return None
    return value


def _fraction_key(key: str) -> bool:
    if key in (FRACTION_ANNOTATION, MEMORY_ANNOTATION, DEVICES_ANNOTATION):
        return True
    return key.startswith(CONTAINER_PREFIX) and key.endswith((CONTAINER_REQUEST, CONTAINER_LIMIT))


def check_fraction_annotations(annotations: Mapping[str, Any]) -> Mapping[str, Any]:
    """`annotations` when every fraction annotation is a short ASCII number; else OutOfBounds."""
    for key, value in annotations.items():
        if _fraction_key(str(key)):
            number_text(value, field=f"metadata.annotations.{key}")
    return annotations


def bounded_fraction(
    fraction: GpuFraction | None, annotations: Mapping[str, Any]
) -> GpuFraction | None:
    """`fraction` when its MiB and device count are ones a cluster can hold; else OutOfBounds."""
    if fraction is None:
        return None
    for mib in (fraction.memory_mib, fraction.limit_mib):
        if mib is not None and mib > MAX_MIB:
            field = f"metadata.annotations.{fraction.annotation}"
            raise OutOfBounds(field, annotations.get(fraction.annotation, mib), "out-of-bounds")
    if fraction.devices > MAX_COUNT:
        field = f"metadata.annotations.{DEVICES_ANNOTATION}"
        raise OutOfBounds(field, annotations.get(DEVICES_ANNOTATION), "out-of-bounds")
    return fraction
