"""What the kubelet's PodResources API lists for the device plugin's resources.

A running pod's GPU processes pin the devices they run on (a replica per process on a
shared GPU); running containers without a process get the plugin's other devices in pod
order, as the kubelet's device manager hands them out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.report import DeviceAssignment
from app.simulator.node.inventory import GpuProcess, NodeInventory
from app.simulator.node.podstatus import requested
from app.simulator.plugin.outcome import GPU_RESOURCE, SHARED_RESOURCE, PluginOutcome


def device_assignments(
    inventory: NodeInventory,
    processes: Sequence[GpuProcess],
    pods: Mapping[tuple[str, str], Mapping[str, Any]],
    outcome: PluginOutcome | None,
) -> list[DeviceAssignment]:
    """What the kubelet's PodResources API would list: devices of running pod processes."""
    replicas = outcome.sharing.replicas if outcome else 1
    resource = SHARED_RESOURCE if outcome and outcome.sharing.renamed else GPU_RESOURCE
    uuids = {g.index: g.uuid for g in inventory.gpus}
    next_replica: dict[int, int] = {}
    devices: dict[tuple[str, str, str], list[str]] = {}
    for proc in processes:
        if not proc.is_pod:
            continue
        key = (proc.pod_namespace or "", proc.pod_name or "")
        pod = pods.get(key)
        if pod is None or pod.get("status", {}).get("phase") != "Running":
            continue
        if replicas > 1:
            n = next_replica.get(proc.gpu_index, 0)
            next_replica[proc.gpu_index] = n + 1
            device = f"{uuids[proc.gpu_index]}::{n % replicas}"
        else:
            device = uuids[proc.gpu_index]
        ids = devices.setdefault((key[0], key[1], proc.container or ""), [])
        if device not in ids:
            ids.append(device)
    found = [
        DeviceAssignment(namespace=ns, pod=pod, container=c, resource=resource, device_ids=ids)
        for (ns, pod, c), ids in devices.items()
    ]
    return found + _allocated(pods, outcome, found)


def _allocated(
    pods: Mapping[tuple[str, str], Mapping[str, Any]],
    outcome: PluginOutcome | None,
    known: list[DeviceAssignment],
) -> list[DeviceAssignment]:
    """The simulated kubelet's allocation for running containers without a GPU process.

    Device ids of each resource the plugin serves go to those containers in pod order,
    skipping ids already held by containers whose processes pinned them.
    """
    if outcome is None:
        return []
    taken = {i for a in known for i in a.device_ids}
    seen = {(a.namespace, a.pod, a.container, a.resource) for a in known}
    free = {name: [i for i in ids if i not in taken] for name, ids in outcome.devices.items()}
    found = []
    for (namespace, name), pod in sorted(pods.items()):
        if pod.get("status", {}).get("phase") != "Running":
            continue
        for container in pod.get("spec", {}).get("containers") or []:
            for resource, ids in free.items():
                count = requested(container, resource)
                key = (namespace, name, str(container.get("name", "")), resource)
                if not count or key in seen or len(ids) < count:
                    continue
                chosen, free[resource] = ids[:count], ids[count:]
                found.append(
                    DeviceAssignment(
                        namespace=namespace,
                        pod=name,
                        container=key[2],
                        resource=resource,
                        device_ids=chosen,
                    )
                )
    return found
