"""Findings about one GPU: what runs on it next to what Kubernetes counts on it."""

from __future__ import annotations

from app.domain.accounting.facts import ClusterFacts, NodeFacts
from app.domain.accounting.gpus import GpuFacts
from app.domain.accounting.pods import pod_key
from app.domain.changes.split_models import editor_path
from app.domain.findings.catalogue import finding
from app.domain.findings.fractions import fraction_findings
from app.domain.findings.shell import sh
from app.domain.snapshot import EvidenceValue, Finding, Mode

HOST_MEMORY_MIN_MIB = 1024


def gpu_findings(facts: ClusterFacts, node: NodeFacts) -> list[Finding]:
    found: list[Finding] = []
    assigned = _assigned_uuids(node)
    for gpu in node.gpus:
        if gpu.role == "advertised":
            found += _host_use(node, gpu)
            found += _pressure(facts, node, gpu)
        found += _pod_processes(facts, node, gpu, assigned)
        found += fraction_findings(node, gpu)
    return found


def _host_use(node: NodeFacts, gpu: GpuFacts) -> list[Finding]:
    found = []
    hosts = [p for p in gpu.processes if p.owner == "host"]
    for proc in hosts:
        found.append(
            finding(
                "host-process-on-advertised-gpu",
                f"Host process {proc.pid} uses GPU {gpu.reading.index} on {node.name}, which "
                "Kubernetes counts as free slots",
                evidence={
                    "pid": proc.pid,
                    "command": proc.command,
                    "user": proc.user,
                    "used_memory_mib": proc.used_memory_mib,
                    "gpu_index": gpu.reading.index,
                    "memory_total_mib": gpu.reading.memory_total_mib,
                },
                remedy=(
                    f"move PID {proc.pid} to a host GPU (CUDA_VISIBLE_DEVICES=<host GPU UUID>), "
                    f"or keep this GPU for the host in the GPU editor {sh(editor_path(node.name))}"
                ),
                node=node.name,
                gpu_uuid=gpu.uuid,
            )
        )
    used = gpu.reading.memory_used_mib
    if not hosts and used is not None and used - gpu.memory_pods_mib >= HOST_MEMORY_MIN_MIB:
        found.append(
            finding(
                "host-memory-on-advertised-gpu",
                f"{used - gpu.memory_pods_mib} MiB of GPU {gpu.reading.index} on {node.name} "
                "is held outside any pod",
                evidence={
                    "memory_used_mib": used,
                    "memory_pods_mib": gpu.memory_pods_mib,
                    "memory_outside_pods_mib": used - gpu.memory_pods_mib,
                    "memory_total_mib": gpu.reading.memory_total_mib,
                },
                remedy=(
                    f"on {sh(node.name)}: nvidia-smi --query-compute-apps=pid,used_memory "
                    "--format=csv  # run the agent with hostPID to name the process"
                ),
                node=node.name,
                gpu_uuid=gpu.uuid,
            )
        )
    return found


def _pressure(facts: ClusterFacts, node: NodeFacts, gpu: GpuFacts) -> list[Finding]:
    total = gpu.reading.memory_total_mib
    if node.mode not in (Mode.TIME_SLICING, Mode.MPS) or not total:
        return []
    pct = 100.0 * gpu.memory_pods_mib / total
    if pct < facts.options.memory_pressure_pct:
        return []
    pods = {p.pod_uid for p in gpu.processes if p.owner == "pod"}
    return [
        finding(
            "shared-gpu-memory-pressure",
            f"Pods sharing GPU {gpu.reading.index} on {node.name} use {pct:.0f}% of its memory: "
            "time-slicing has no memory isolation",
            evidence={
                "memory_pods_mib": gpu.memory_pods_mib,
                "memory_total_mib": total,
                "used_pct": round(pct, 1),
                "threshold_pct": facts.options.memory_pressure_pct,
                "pods": len(pods),
            },
            remedy=(
                "cap the memory of each pod in the workload (e.g. PYTORCH_CUDA_ALLOC_CONF, "
                "TF_FORCE_GPU_ALLOW_GROWTH) or lower replicas in the plugin config"
            ),
            node=node.name,
            gpu_uuid=gpu.uuid,
        )
    ]


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
) -> list[Finding]:
    found = []
    for proc in gpu.processes:
        uid = proc.pod_uid
        if proc.owner != "pod" or uid is None or uid not in facts.pods_by_uid:
            continue
        pod_facts = facts.pod_facts.get(uid)
        if pod_facts is not None and pod_facts.fraction is not None:
            continue  # a GPU fraction: a holder of a share of this GPU (fraction_ledger.py)
        key = pod_key(facts.pods_by_uid[uid])
        evidence: dict[str, EvidenceValue] = {
            "pid": proc.pid,
            "pod": key,
            "used_memory_mib": proc.used_memory_mib,
            "command": proc.command,
            "gpu_index": gpu.reading.index,
        }
        namespace, _, name = key.partition("/")
        if not facts.slots_by_uid.get(uid):
            found.append(
                finding(
                    "pod-process-without-slot",
                    f"Pod {key} uses GPU {gpu.reading.index} on {node.name} without requesting "
                    "a GPU slot: the scheduler does not count it",
                    evidence={**evidence, "requested_slots": 0},
                    remedy=(
                        f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml  # request "
                        f"{sh(node.resource)}: 1 in its resources.limits, and remove any "
                        "NVIDIA_VISIBLE_DEVICES from its env"
                    ),
                    node=node.name,
                    gpu_uuid=gpu.uuid,
                    pod=key,
                )
            )
        elif assigned is not None and gpu.uuid not in assigned.get(key, set()):
            found.append(
                finding(
                    "pod-process-on-unassigned-gpu",
                    f"Pod {key} runs on GPU {gpu.reading.index} on {node.name}, which the "
                    "kubelet did not assign to it",
                    evidence={
                        **evidence,
                        "assigned_gpus": ",".join(sorted(assigned.get(key, set()))) or None,
                    },
                    remedy=(
                        f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml  # remove "
                        "NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES overrides from its env"
                    ),
                    node=node.name,
                    gpu_uuid=gpu.uuid,
                    pod=key,
                )
            )
    return found
