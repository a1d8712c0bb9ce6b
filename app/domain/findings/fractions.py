"""Findings about GPU fractions (KAI / Run:ai) on one GPU: over-shared, over-used, unreserved."""

from __future__ import annotations

from app.domain.accounting.facts import NodeFacts
from app.domain.accounting.ledger.models import GpuFacts
from app.domain.findings.catalogue import finding, gpu_finding
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.snapshot import EvidenceValue, Finding, SlotHolder

_EPSILON = 1e-6


def fraction_findings(node: NodeFacts, gpu: GpuFacts) -> list[Finding]:
    """Every fraction finding of one GPU; none when no fraction pod shares it."""
    holders = [h for h in gpu.holders if h.source == "fraction"]
    if not holders:
        return []
    return [
        *_over_one(node, gpu, holders),
        *_over_limit(node, gpu, holders),
        *_unreserved(node, gpu, holders),
    ]


def _over_one(node: NodeFacts, gpu: GpuFacts, holders: list[SlotHolder]) -> list[Finding]:
    shares = [h.share for h in holders if h.share is not None]
    total = round(sum(shares), 3)
    if total <= 1 + _EPSILON:
        return []
    pods = ", ".join(h.pod for h in holders)
    evidence: dict[str, EvidenceValue] = {
        "share_total": total,
        "fraction_pods": len(holders),
        "pods": pods,
        "gpu_index": gpu.reading.index,
        "memory_total_mib": gpu.reading.memory_total_mib,
    }
    command = f"kubectl get pods -A -o wide --field-selector spec.nodeName={sh(node.name)}"
    fix = remedy(command, "fractions-shrink", pods=pods)
    return [gpu_finding("gpu-fractions-over-one", evidence, fix, node=node.name, gpu=gpu.uuid)]


def _used_mib(gpu: GpuFacts, pod: str) -> int:
    return sum(p.used_memory_mib or 0 for p in gpu.processes if p.pod == pod)


def _over_limit(node: NodeFacts, gpu: GpuFacts, holders: list[SlotHolder]) -> list[Finding]:
    found = []
    for holder in holders:
        used = _used_mib(gpu, holder.pod)
        limit = holder.memory_limit_mib
        if limit is None or used <= limit:
            continue
        namespace, _, name = holder.pod.partition("/")
        found.append(
            finding(
                "gpu-fraction-memory-over-limit",
                evidence={
                    "used_memory_mib": used,
                    "memory_limit_mib": limit,
                    "share": holder.share,
                    "annotation": holder.resource,
                    "gpu_index": gpu.reading.index,
                },
                remedy=remedy(
                    f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml", "fraction-memory-cap"
                ),
                node=node.name,
                gpu_uuid=gpu.uuid,
                pod=holder.pod,
            )
        )
    return found


def _unreserved(node: NodeFacts, gpu: GpuFacts, holders: list[SlotHolder]) -> list[Finding]:
    """Fraction pods on an advertised GPU whose slots nobody holds: the scheduler sees it free."""
    if gpu.role != "advertised" or any(h.assignment == "reservation" for h in holders):
        return []
    held = sum(h.slots for h in gpu.holders if h.source != "fraction")
    if held:
        return []
    evidence: dict[str, EvidenceValue] = {
        "pods": ", ".join(h.pod for h in holders),
        "fraction_pods": len(holders),
        "free_slots": gpu.slots,
        "gpu_index": gpu.reading.index,
    }
    fix = remedy("", "fraction-kai-scheduler", node=node.name)
    return [gpu_finding("gpu-fraction-unreserved", evidence, fix, node=node.name, gpu=gpu.uuid)]
