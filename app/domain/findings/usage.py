"""Findings from the idle history, and a snapshot with them added where they belong.

They come after the engine (the engine sees one moment; these need the history), so the
snapshot service adds them to each new snapshot: to the cluster list, the node's list and
the GPU's codes and worst severity.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from app.domain.findings.catalogue import finding, sort_key
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.snapshot import SEVERITY_RANK, Finding, GpuState, NodeState, Snapshot
from app.domain.usage.idle import IdleHolder, LowGpu


def duration_text(
    seconds: float, *, units: tuple[str, str, str] = (" s", " min", " h"), gap: str = " "
) -> str:
    """A duration as people say it: `35 s`, `42 min`, `1 h 5 min` (other `units` per language)."""
    second, minute, hour = units
    whole = max(0, int(seconds))
    if whole < 120:
        return f"{whole}{second}"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes}{minute}"
    hours, rest = divmod(minutes, 60)
    return f"{hours}{hour}{gap}{rest}{minute}" if rest else f"{hours}{hour}"


def _pod_command(pod: str) -> tuple[str, str]:
    namespace, _, name = pod.partition("/")
    return sh(namespace or "default"), sh(name or pod)


def idle_holder_finding(item: IdleHolder) -> Finding:
    namespace, name = _pod_command(item.pod)
    idle = duration_text(item.idle_s)
    return finding(
        "slot-held-idle",
        words={"count": item.slots},
        evidence={
            "idle_for": idle,
            "idle_for_s": round(item.idle_s),
            "held_slots": item.slots,
            "gpu_index": item.gpu_index,
            "gpu_processes_of_pod": 0,
            "watched_since": item.watched_since.isoformat(),
        },
        remedy=remedy(f"kubectl -n {namespace} delete pod {name}", "delete-once-owner-agrees"),
        node=item.node,
        gpu_uuid=item.gpu_uuid,
        pod=item.pod,
    )


def low_gpu_finding(item: LowGpu) -> Finding:
    low = duration_text(item.low_s)
    return finding(
        "gpu-utilization-low",
        evidence={
            "low_for": low,
            "low_for_s": round(item.low_s),
            "gpu_index": item.gpu_index,
            "holders": ", ".join(item.holders) or "?",
            "utilization_below_pct": 1,
        },
        remedy=(
            remedy(
                " && ".join(
                    "kubectl -n {} get pod {} -o wide".format(*_pod_command(pod))
                    for pod in item.holders
                ),
                "ask-holders",
            )
            if item.holders
            else "nvidia-smi -q -d UTILIZATION"
        ),
        node=item.node,
        gpu_uuid=item.gpu_uuid,
    )


def history_findings(idle: Iterable[IdleHolder], low: Iterable[LowGpu]) -> list[Finding]:
    """The idle-slot and low-utilization findings of what the history found
    (UsageHistory.idle_holders and low_gpus)."""
    return [*map(idle_holder_finding, idle), *map(low_gpu_finding, low)]


def with_findings(snapshot: Snapshot, extra: list[Finding]) -> Snapshot:
    """`snapshot` with `extra` findings added to the cluster, node and GPU views."""
    if not extra:
        return snapshot
    by_node: dict[str, list[Finding]] = defaultdict(list)
    for item in extra:
        if item.node is not None:
            by_node[item.node].append(item)
    nodes = [
        _node_with(node, by_node[node.name]) if node.name in by_node else node
        for node in snapshot.nodes
    ]
    findings = sorted([*snapshot.findings, *extra], key=sort_key)
    return snapshot.model_copy(update={"nodes": nodes, "findings": findings})


def _node_with(node: NodeState, extra: list[Finding]) -> NodeState:
    by_gpu: dict[str, list[Finding]] = defaultdict(list)
    for item in extra:
        if item.gpu_uuid is not None:
            by_gpu[item.gpu_uuid].append(item)
    gpus = [_gpu_with(gpu, by_gpu[gpu.uuid]) if gpu.uuid in by_gpu else gpu for gpu in node.gpus]
    findings = sorted([*node.findings, *extra], key=sort_key)
    return node.model_copy(update={"gpus": gpus, "findings": findings})


def _gpu_with(gpu: GpuState, extra: list[Finding]) -> GpuState:
    severities = [item.severity for item in extra]
    if gpu.worst_severity is not None:
        severities.append(gpu.worst_severity)
    worst = min(severities, key=lambda severity: SEVERITY_RANK[severity])
    codes = sorted({*gpu.finding_codes, *(item.code for item in extra)})
    return gpu.model_copy(update={"finding_codes": codes, "worst_severity": worst})
