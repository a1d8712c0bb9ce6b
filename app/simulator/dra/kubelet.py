"""The simulated kubelet's side of DRA: what PodResources lists, and the pods' GPU processes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from app.domain.report import DraAssignment
from app.simulator.apiserver.registry import Registry
from app.simulator.apiserver.resources import POD, RESOURCECLAIM, RESOURCESLICE
from app.simulator.apiserver.store import JsonObject
from app.simulator.dra.slices import DRIVER
from app.simulator.node.inventory import GpuProcess, NodeInventory

MEMORY_ANNOTATION = "sim.gpu-slots.io/used-memory-mib"
COMMAND_ANNOTATION = "sim.gpu-slots.io/command"


def kubelet_assignments(registry: Registry, node: str) -> list[DraAssignment]:
    """The `dynamic_resources` of the node's Running pods, one per claim device."""
    pods = [p for p in registry.store.objects(POD) if (p.get("spec") or {}).get("nodeName") == node]
    return assignments(pods, registry.store.objects(RESOURCECLAIM))


def reserved_pods(claim: Mapping[str, Any]) -> list[str]:
    return [str(r.get("name", "")) for r in (claim.get("status") or {}).get("reservedFor") or []]


def allocated_devices(claim: Mapping[str, Any]) -> list[JsonObject]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def assignments(
    node_pods: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]
) -> list[DraAssignment]:
    """The `dynamic_resources` of the node's Running pods, one per claim device."""
    running = {
        (p["metadata"].get("namespace", ""), p["metadata"]["name"]): p
        for p in node_pods
        if (p.get("status") or {}).get("phase") == "Running"
    }
    found: list[DraAssignment] = []
    for claim in claims:
        namespace = claim["metadata"].get("namespace", "")
        for name in reserved_pods(claim):
            pod = running.get((namespace, name))
            if pod is None:
                continue
            containers = (pod.get("spec") or {}).get("containers") or [{}]
            found.extend(
                DraAssignment(
                    namespace=namespace,
                    pod=name,
                    container=str(containers[0].get("name", "")),
                    claim_namespace=namespace,
                    claim=claim["metadata"]["name"],
                    driver=str(result.get("driver", "")),
                    pool=str(result.get("pool", "")),
                    device=str(result.get("device", "")),
                )
                for result in allocated_devices(claim)
            )
    return found


def start_pod_processes(
    registry: Registry,
    inventory: NodeInventory,
    pod: JsonObject,
    results: Sequence[JsonObject],
    start: Callable[[GpuProcess], object],
) -> None:
    """Start the pod's simulated GPU process on each GPU its claims got (MIG: the parent)."""
    node = inventory.node
    annotations = pod["metadata"].get("annotations") or {}
    try:
        memory_mib = int(annotations.get(MEMORY_ANNOTATION, ""))
    except ValueError:
        return  # no (or no valid) simulated process asked for
    if memory_mib < 0:
        return
    by_uuid = {g.uuid: g.index for g in inventory.gpus}
    entry = registry.store.get(RESOURCESLICE, None, f"{node}-{DRIVER}")
    listed = (entry.obj.get("spec") or {}).get("devices") or [] if entry else []
    devices = {d.get("name"): d for d in listed}
    indexes: list[int] = []
    for result in results:
        attributes = (devices.get(result.get("device")) or {}).get("attributes") or {}
        uuid = (attributes.get("parentUUID") or attributes.get("uuid") or {}).get("string")
        if uuid in by_uuid and by_uuid[uuid] not in indexes:
            indexes.append(by_uuid[uuid])
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    for index in indexes:
        start(
            GpuProcess(
                node=node,
                gpu_index=index,
                pid=0,
                used_memory_mib=memory_mib,
                command=str(annotations.get(COMMAND_ANNOTATION, "")),
                pod_namespace=pod["metadata"].get("namespace", "default"),
                pod_name=pod["metadata"]["name"],
                container=containers[0].get("name"),
            )
        )
