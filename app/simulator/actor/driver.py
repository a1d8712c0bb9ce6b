"""NVIDIA's DRA driver on the scenario's DRA nodes, against a real API server.

It publishes what the embedded simulator publishes (`dra/slices.py`: the DeviceClasses
and one ResourceSlice per node); the real scheduler allocates the claims. From the
allocated claims it derives what the node's kubelet knows: which devices a running pod
got (for its simulated GPU process) and PodResources' `dynamic_resources`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.simulator.dra.kubelet import (
    COMMAND_ANNOTATION,
    MEMORY_ANNOTATION,
    allocated_devices,
    reserved_pods,
)
from app.simulator.dra.slices import slice_devices
from app.simulator.node.inventory import GpuProcess, NodeInventory

JsonObject = dict[str, Any]


def pod_processes(
    pod: Mapping[str, Any], inventory: NodeInventory, claims: Iterable[Mapping[str, Any]]
) -> list[GpuProcess]:
    """The pod's simulated GPU process on each GPU its claims got (MIG: the parent GPU)."""
    annotations = pod["metadata"].get("annotations") or {}
    try:
        memory_mib = int(annotations.get(MEMORY_ANNOTATION, ""))
    except ValueError:
        return []
    if memory_mib < 0:
        return []
    namespace, name = pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]
    devices = {d["name"]: d for d in slice_devices(inventory)}
    by_uuid = {g.uuid: g.index for g in inventory.gpus}
    indexes: list[int] = []
    for claim in claims:
        if claim["metadata"].get("namespace") != namespace or name not in reserved_pods(claim):
            continue
        for result in allocated_devices(claim):
            attributes = (devices.get(str(result.get("device"))) or {}).get("attributes") or {}
            uuid = (attributes.get("parentUUID") or attributes.get("uuid") or {}).get("string")
            if uuid in by_uuid and by_uuid[uuid] not in indexes:
                indexes.append(by_uuid[uuid])
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return [
        GpuProcess(
            node=inventory.node,
            gpu_index=index,
            pid=0,
            used_memory_mib=memory_mib,
            command=str(annotations.get(COMMAND_ANNOTATION, "")),
            pod_namespace=namespace,
            pod_name=name,
            container=containers[0].get("name"),
        )
        for index in indexes
    ]
