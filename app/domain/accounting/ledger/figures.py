"""A node's GPU figures: every resource with free and stranded, the slots it should advertise.

Every GPU resource a node advertises is accounted on its own (`nvidia.com/gpu`, `.shared`,
`nvidia.com/mig-<profile>`); the cluster's totals are sums of the nodes' figures.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.domain.accounting.ledger.devices import uses_mig
from app.domain.accounting.ledger.models import GpuFacts
from app.domain.accounting.pods import parse_count
from app.domain.cluster import Manifest
from app.domain.plugin.effective import EffectiveConfig
from app.domain.snapshot import PodSlots, ResourceState

NVIDIA_PREFIX = "nvidia.com/"


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


def held_counts(held: Mapping[str, list[PodSlots]]) -> dict[str, int]:
    """Slots held per resource."""
    return {name: sum(p.slots for p in group) for name, group in held.items()}


def expected_slots(
    visible: int | None, config: EffectiveConfig, gpus: list[GpuFacts]
) -> int | None:
    """Slots of the node's own resource the plugin should advertise (None: cannot say)."""
    if visible is None or config.config is None:
        return None
    mig = [g for g in gpus if uses_mig(g, config)]
    if not mig:
        return visible * config.config.replicas
    if config.config.mig_strategy == "mixed":
        return (visible - len(mig)) * config.config.replicas
    if any(not g.reading.mig_devices for g in mig):
        return None  # single strategy, MIG devices not reported: unknown
    return sum(g.slots for g in gpus if g.role == "advertised")


def expected_by_resource(gpus: list[GpuFacts], config: EffectiveConfig) -> dict[str, int]:
    """Expected slots of every resource the node's advertised GPUs and MIG devices give."""
    if config.config is None:
        return {}
    expected: dict[str, int] = {}
    for gpu in gpus:
        if gpu.role != "advertised":
            continue
        if uses_mig(gpu, config):
            for device in gpu.mig_devices:
                if device.resource is not None:
                    expected[device.resource] = expected.get(device.resource, 0) + device.slots
        else:
            expected[config.config.resource] = expected.get(config.config.resource, 0) + gpu.slots
    return expected
