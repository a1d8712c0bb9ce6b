"""NVIDIA's DRA driver on the scenario's DRA nodes, against a real API server.

It publishes what the embedded simulator publishes (`dra_slices.py`: the DeviceClasses
and one ResourceSlice per node); the real scheduler allocates the claims. From the
allocated claims it derives what the node's kubelet knows: which devices a running pod
got (for its simulated GPU process) and PodResources' `dynamic_resources`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.domain.report import DraAssignment
from app.simulator.dra_kubelet import COMMAND_ANNOTATION, MEMORY_ANNOTATION
from app.simulator.dra_slices import slice_devices
from app.simulator.inventory import GpuProcess, NodeInventory

JsonObject = dict[str, Any]


def _reserved_pods(claim: Mapping[str, Any]) -> list[str]:
    return [str(r.get("name", "")) for r in (claim.get("status") or {}).get("reservedFor") or []]


def _results(claim: Mapping[str, Any]) -> list[JsonObject]:
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
        for name in _reserved_pods(claim):
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
                for result in _results(claim)
            )
    return found


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
        if claim["metadata"].get("namespace") != namespace or name not in _reserved_pods(claim):
            continue
        for result in _results(claim):
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
