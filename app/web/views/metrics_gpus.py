"""Per GPU, per MIG device and per slot holder: what Prometheus needs past the page's hour.

Every series names the GPU as the DCGM exporter does (`gpu` index, `UUID`, `Hostname`,
the node name as the GPU Operator's exporter sets it) beside our `node`, so
`DCGM_FI_DEV_GPU_UTIL * on (UUID) group_left ...` joins without relabelling.
"""

from __future__ import annotations

from app.domain.snapshot import GpuState, NodeState, Snapshot
from app.web.views.metrics_family import Family, Labels, gauge
from app.web.views.metrics_nodes import advertising_nodes

MIB = 1024 * 1024


def dcgm_labels(node: str, index: int, uuid: str) -> Labels:
    """The labels that name a GPU in every series about one: ours (node, gpu) and the DCGM
    exporter's (UUID, Hostname)."""
    return {"node": node, "gpu": str(index), "UUID": uuid, "Hostname": node}


def gpu_labels(node: NodeState, gpu: GpuState) -> Labels:
    """The labels of one GPU's series."""
    return dcgm_labels(node.name, gpu.index, gpu.uuid)


def gpu_families(snapshot: Snapshot) -> list[Family]:
    nodes = advertising_nodes(snapshot)
    return [*_gpus(nodes), *_mig_devices(nodes), *_holders(nodes)]


def _bytes(mib: int | None) -> int | None:
    return None if mib is None else mib * MIB


def _gpus(nodes: list[NodeState]) -> list[Family]:
    info = gauge("gpu_slots_gpu_info", "A GPU: product name, role and MIG mode labels, value 1")
    slots = gauge("gpu_slots_gpu_slots", "Slots the GPU should give Kubernetes (0: host GPU)")
    held = gauge("gpu_slots_gpu_held_slots", "Slots of the GPU held by pods")
    utilization = gauge(
        "gpu_slots_gpu_utilization_ratio", "GPU utilization, 0-1 (nvidia-smi utilization.gpu)"
    )
    total = gauge("gpu_slots_gpu_memory_total_bytes", "GPU memory (nvidia-smi memory.total)")
    used = gauge("gpu_slots_gpu_memory_used_bytes", "GPU memory used (nvidia-smi memory.used)")
    by_owner = gauge(
        "gpu_slots_gpu_process_memory_bytes",
        "GPU memory of compute processes by owner: pod, or host (also processes not seen)",
    )
    host = gauge(
        "gpu_slots_gpu_host_processes", "Compute processes on the GPU that belong to no pod"
    )
    for node in nodes:
        for gpu in node.gpus:
            labels = gpu_labels(node, gpu)
            info.add(
                {**labels, "name": gpu.name, "role": gpu.role, "mig_mode": gpu.mig_mode or ""}, 1
            )
            slots.add(labels, gpu.slots)
            held.add(labels, gpu.held_slots)
            pct = gpu.utilization_pct
            utilization.add(labels, None if pct is None else pct / 100)
            total.add(labels, _bytes(gpu.memory_total_mib))
            used.add(labels, _bytes(gpu.memory_used_mib))
            by_owner.add({**labels, "owner": "pod"}, _bytes(gpu.memory_pods_mib))
            by_owner.add({**labels, "owner": "host"}, _bytes(gpu.memory_host_mib))
            host.add(labels, sum(1 for p in gpu.processes if p.owner == "host"))
    return [info, slots, held, utilization, total, used, by_owner, host]


def _mig_devices(nodes: list[NodeState]) -> list[Family]:
    slots = gauge("gpu_slots_mig_device_slots", "Slots a MIG device gives Kubernetes")
    held = gauge("gpu_slots_mig_device_held_slots", "Slots of the MIG device held by pods")
    total = gauge("gpu_slots_mig_device_memory_total_bytes", "Memory of the MIG device")
    used = gauge("gpu_slots_mig_device_memory_used_bytes", "Memory used on the MIG device")
    for node in nodes:
        for gpu in node.gpus:
            for device in gpu.mig_devices:
                labels = {
                    **gpu_labels(node, gpu),
                    "mig_uuid": device.uuid,
                    "profile": device.profile,
                    "resource": device.resource or "",
                }
                slots.add(labels, device.slots)
                held.add(labels, device.held_slots)
                total.add(labels, _bytes(device.memory_total_mib))
                used.add(labels, _bytes(device.memory_used_mib))
    return [slots, held, total, used]


def _holders(nodes: list[NodeState]) -> list[Family]:
    """Slots each pod holds on each GPU (its MIG devices included) and its processes there."""
    slots = gauge(
        "gpu_slots_holder_slots", "Slots a pod holds on a GPU (or its MIG devices), by resource"
    )
    processes = gauge(
        "gpu_slots_holder_processes",
        "GPU processes of a pod on a GPU it holds slots of (0: the slots are idle)",
    )
    for node in nodes:
        for gpu in node.gpus:
            held: dict[tuple[str, str], int] = {}
            holders = [*gpu.holders, *(h for d in gpu.mig_devices for h in d.holders)]
            for holder in holders:
                key = (holder.pod, holder.resource)
                held[key] = held.get(key, 0) + holder.slots
            for (pod_key, resource), count in sorted(held.items()):
                namespace, _, pod = pod_key.partition("/")
                labels = {
                    **gpu_labels(node, gpu),
                    "namespace": namespace,
                    "pod": pod,
                    "resource": resource,
                }
                slots.add(labels, count)
                processes.add(labels, sum(1 for p in gpu.processes if p.pod == pod_key))
    return [slots, processes]
