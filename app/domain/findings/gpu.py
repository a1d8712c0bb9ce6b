"""Findings about one GPU: what runs on it next to what Kubernetes counts on it.

One rule per check over the per-GPU ledger (GpuFacts), for the GPUs the device plugin
advertises and those DRA hands out alike: only the words differ by who hands the GPU out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from app.domain.accounting.facts import ClusterFacts, NodeFacts
from app.domain.accounting.ledger.models import GpuFacts, Handler
from app.domain.accounting.pods import pod_key
from app.domain.findings.catalogue import finding
from app.domain.findings.fractions import fraction_findings
from app.domain.findings.remedies import Remedy, remedy
from app.domain.findings.shell import sh
from app.domain.findings.split_remedies import keep_for_host
from app.domain.plugin_target import PluginTarget
from app.domain.snapshot import EvidenceValue, Finding, GpuProcess, Mode

HOST_MEMORY_MIN_MIB = 1024

_DRA_VARIANT: dict[Handler, str | None] = {"device-plugin": None, "dra": "dra"}
_PRESSURE_REMEDY: dict[Handler, Remedy] = {
    "device-plugin": remedy("", "pressure-device-plugin"),
    "dra": remedy("", "pressure-dra"),
}


def gpu_findings(
    facts: ClusterFacts, node: NodeFacts, *, claimed: Mapping[str, set[str]] | None = None
) -> list[Finding]:
    """Every GPU rule on every GPU of the node (DRA's own rules are in dra_node.py).

    `claimed`: the GPU UUIDs each pod's DRA claims hold, where DRA hands out the node's GPUs.
    """
    found: list[Finding] = []
    assigned = _assigned_uuids(node)
    for gpu in node.gpus:
        for handler in gpu.handed_by:
            found += host_process_findings(node, gpu, handler, target=facts.options.plugin)
            if handler == "device-plugin":
                found += host_memory_findings(node, gpu)
            found += memory_pressure_findings(facts, node, gpu, handler)
        found += _pod_processes(facts, node, gpu, assigned, claimed or {})
        found += fraction_findings(node, gpu)
    return found


def host_process_findings(
    node: NodeFacts, gpu: GpuFacts, handler: Handler, *, target: PluginTarget
) -> list[Finding]:
    """A host process on a GPU Kubernetes may hand to a pod: the pod meets its memory."""
    return [
        _host_process(
            node, gpu, proc, handler, keep_for_host(node.spec, node.name, target, proc.pid)
        )
        for proc in gpu.processes
        if proc.owner == "host"
    ]


def _host_process(
    node: NodeFacts, gpu: GpuFacts, proc: GpuProcess, handler: Handler, keep: Remedy
) -> Finding:
    evidence: dict[str, EvidenceValue] = {
        "pid": proc.pid,
        "command": proc.command,
        "user": proc.user,
        "used_memory_mib": proc.used_memory_mib,
        "gpu_index": gpu.reading.index,
        "memory_total_mib": gpu.reading.memory_total_mib,
    }
    if handler == "dra":
        claims = _claims_text(gpu)
        evidence["claims"] = claims or None
        keep = remedy("", "host-process-dra", pid=proc.pid)
    variant = None if handler != "dra" else "dra-claim" if evidence.get("claims") else "dra"
    return finding(
        "host-process-on-advertised-gpu",
        evidence=evidence,
        remedy=keep,
        words={"variant": variant},
        node=node.name,
        gpu_uuid=gpu.uuid,
    )


def host_memory_findings(node: NodeFacts, gpu: GpuFacts) -> list[Finding]:
    """Memory held outside any pod on an advertised GPU whose process the agent cannot name."""
    used = gpu.reading.memory_used_mib
    if any(p.owner == "host" for p in gpu.processes) or used is None:
        return []
    if used - gpu.memory_pods_mib < HOST_MEMORY_MIN_MIB:
        return []
    return [
        finding(
            "host-memory-on-advertised-gpu",
            evidence={
                "memory_used_mib": used,
                "memory_pods_mib": gpu.memory_pods_mib,
                "memory_outside_pods_mib": used - gpu.memory_pods_mib,
                "memory_total_mib": gpu.reading.memory_total_mib,
            },
            words={"gpu_index": gpu.reading.index},
            remedy=remedy(
                "nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
                "host-memory-hostpid",
                node=node.name,
            ),
            node=node.name,
            gpu_uuid=gpu.uuid,
        )
    ]


def memory_pressure_findings(
    facts: ClusterFacts, node: NodeFacts, gpu: GpuFacts, handler: Handler
) -> list[Finding]:
    """Pods sharing a GPU near its memory: nothing isolates one pod's memory from another's."""
    total = gpu.reading.memory_total_mib
    sharers = _sharers(node, gpu, handler)
    if sharers is None or not total:
        return []
    pct = 100.0 * gpu.memory_pods_mib / total
    threshold = facts.options.memory_pressure_pct
    if pct < threshold:
        return []
    return [
        finding(
            "shared-gpu-memory-pressure",
            evidence={
                "memory_pods_mib": gpu.memory_pods_mib,
                "memory_total_mib": total,
                "used_pct": round(pct, 1),
                "threshold_pct": threshold,
                **sharers,
            },
            remedy=_PRESSURE_REMEDY[handler],
            words={
                "gpu_index": gpu.reading.index,
                "pct": round(pct),
                "variant": _DRA_VARIANT[handler],
            },
            node=node.name,
            gpu_uuid=gpu.uuid,
        )
    ]


def _sharers(node: NodeFacts, gpu: GpuFacts, handler: Handler) -> dict[str, EvidenceValue] | None:
    """Who shares the GPU, as evidence; None when the handler does not share it."""
    if handler == "device-plugin":
        if node.mode not in (Mode.TIME_SLICING, Mode.MPS):
            return None
        return {"pods": len({p.pod_uid for p in gpu.processes if p.owner == "pod"})}
    dra = [h for h in gpu.holders if h.source == "dra"]
    pods = {h.pod for h in dra}
    if len(pods) < 2 and all(h.sharing is None or h.sharing.strategy == "Exclusive" for h in dra):
        return None
    strategies = sorted({h.sharing.strategy for h in dra if h.sharing is not None})
    return {"pods": len(pods), "claims": _claims_text(gpu), "sharing": ",".join(strategies)}


def _claims_text(gpu: GpuFacts) -> str:
    return ",".join(sorted({h.claim for h in gpu.holders if h.claim}))


def _assigned_uuids(node: NodeFacts) -> dict[str, set[str]] | None:
    """GPU UUIDs per pod (namespace/name) the kubelet assigned, when the agent knows."""
    if node.report is None or node.report.report.assignments is None:
        return None
    assigned: dict[str, set[str]] = {}
    for item in node.report.report.assignments:
        uuids = assigned.setdefault(f"{item.namespace}/{item.pod}", set())
        uuids.update(device.split("::", 1)[0] for device in item.device_ids)
    return assigned


def _pod_processes(
    facts: ClusterFacts,
    node: NodeFacts,
    gpu: GpuFacts,
    assigned: dict[str, set[str]] | None,
    claimed: Mapping[str, set[str]],
) -> list[Finding]:
    """Pod processes on a GPU nobody handed to the pod: no slot, or not the kubelet's/claim's."""
    found = []
    for proc in gpu.processes:
        uid = proc.pod_uid
        if proc.owner != "pod" or uid is None or uid not in facts.pods_by_uid:
            continue
        pod_facts = facts.pod_facts.get(uid)
        if pod_facts is not None and pod_facts.fraction is not None:
            continue  # a GPU fraction: a holder of a share of this GPU (ledger/fractions.py)
        key = pod_key(facts.pods_by_uid[uid])
        if gpu.uuid in claimed.get(key, set()):
            continue  # its DRA claim holds this GPU: accounted
        evidence: dict[str, EvidenceValue] = {
            "pid": proc.pid,
            "pod": key,
            "used_memory_mib": proc.used_memory_mib,
            "command": proc.command,
            "gpu_index": gpu.reading.index,
        }
        if not facts.slots_by_uid.get(uid):
            evidence["requested_slots"] = 0
            if claimed.get(key):  # it holds other GPUs through its claims
                found.append(_unassigned(node, gpu, key, evidence, claimed[key], by="claim"))
            else:
                found.append(_without_slot(node, gpu, key, evidence))
        elif assigned is not None and gpu.uuid not in assigned.get(key, set()):
            found.append(_unassigned(node, gpu, key, evidence, assigned.get(key), by="kubelet"))
    return found


def _without_slot(
    node: NodeFacts, gpu: GpuFacts, key: str, evidence: dict[str, EvidenceValue]
) -> Finding:
    namespace, _, name = key.partition("/")
    return finding(
        "pod-process-without-slot",
        evidence=evidence,
        remedy=remedy(
            f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml",
            "request-a-slot",
            resource=node.resource,
        ),
        node=node.name,
        gpu_uuid=gpu.uuid,
        pod=key,
    )


def _unassigned(
    node: NodeFacts,
    gpu: GpuFacts,
    key: str,
    evidence: dict[str, EvidenceValue],
    uuids: set[str] | None,
    *,
    by: Literal["kubelet", "claim"],
) -> Finding:
    """A pod process on a GPU other than the ones the kubelet (plugin) or its claim gave it."""
    namespace, _, name = key.partition("/")
    return finding(
        "pod-process-on-unassigned-gpu",
        evidence={**evidence, "assigned_gpus": ",".join(sorted(uuids or ())) or None},
        words={"variant": "claim" if by == "claim" else None},
        remedy=remedy(
            f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml", "remove-visible-devices"
        ),
        node=node.name,
        gpu_uuid=gpu.uuid,
        pod=key,
    )
