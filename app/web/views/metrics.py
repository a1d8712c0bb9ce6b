"""The snapshot in the Prometheus text exposition format (version 0.0.4)."""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.snapshot import Snapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render_metrics(snapshot: Snapshot) -> str:
    """Slots allocatable/requested/free and findings per node, plus cluster totals."""
    lines: list[str] = []
    per_node = [
        ("gpu_slots_allocatable", "Slots the node advertises as allocatable", "allocatable"),
        ("gpu_slots_requested", "Slots held by pods on the node", "requested"),
        ("gpu_slots_free", "Schedulable free slots (never negative; 0 when unschedulable)", "free"),
        ("gpu_slots_expected", "Slots the plugin config should give the node", "expected_slots"),
        ("gpu_slots_physical_gpus", "GPUs the node's agent reports", "physical_gpus"),
        ("gpu_slots_host_gpus", "GPUs kept out of Kubernetes for host processes", "host_gpus"),
        ("gpu_slots_failing_gpus", "GPUs not advertised because the plugin fails", "failing_gpus"),
    ]
    for metric, help_text, field in per_node:
        lines += _header(metric, help_text, "gauge")
        for node in snapshot.nodes:
            value = getattr(node, field)
            if value is not None:
                labels = {"node": node.name, "resource": node.resource}
                lines.append(_sample(metric, labels, value))
    lines += _resource_lines(snapshot)
    lines += _header("gpu_slots_findings", "Open findings by node and severity", "gauge")
    for node in snapshot.nodes:
        counts: dict[str, int] = {}
        for finding in node.findings:
            counts[finding.severity.value] = counts.get(finding.severity.value, 0) + 1
        for severity, count in sorted(counts.items()):
            lines.append(
                _sample("gpu_slots_findings", {"node": node.name, "severity": severity}, count)
            )
    lines += _header(
        "gpu_slots_cluster_findings", "Open findings in the cluster by severity", "gauge"
    )
    for severity, count in snapshot.severity_counts().items():
        lines.append(_sample("gpu_slots_cluster_findings", {"severity": severity}, count))
    lines += _gpu_lines(snapshot)
    lines += _header(
        "gpu_slots_dra_devices", "GPU and MIG devices of DRA drivers, by state", "gauge"
    )
    dra = snapshot.dra
    for state, count in (
        ("total", dra.devices),
        ("allocated", dra.allocated),
        ("shared", dra.shared),
        ("free", dra.free),
        ("stranded", dra.stranded),
    ):
        lines.append(_sample("gpu_slots_dra_devices", {"state": state}, count))
    lines += _header("gpu_slots_dra_pending_claims", "GPU claims not allocated yet", "gauge")
    lines.append(_sample("gpu_slots_dra_pending_claims", {}, dra.pending_claims))
    lines += _header("gpu_slots_stale", "1 while the API server cannot be reached", "gauge")
    lines.append(_sample("gpu_slots_stale", {}, int(snapshot.stale)))
    return "\n".join(lines) + "\n"


def _gpu_lines(snapshot: Snapshot) -> list[str]:
    """Per GPU and per slot holder: what Prometheus needs for idle history past one hour."""
    lines: list[str] = []
    per_gpu = [
        ("gpu_slots_gpu_utilization_percent", "GPU utilization (nvidia-smi utilization.gpu)"),
        ("gpu_slots_gpu_memory_used_mib", "GPU memory used in MiB (nvidia-smi memory.used)"),
        ("gpu_slots_gpu_held_slots", "Slots of the GPU held by pods"),
    ]
    values = {
        "gpu_slots_gpu_utilization_percent": lambda g: g.utilization_pct,
        "gpu_slots_gpu_memory_used_mib": lambda g: g.memory_used_mib,
        "gpu_slots_gpu_held_slots": lambda g: g.held_slots,
    }
    for metric, help_text in per_gpu:
        lines += _header(metric, help_text, "gauge")
        for node in snapshot.nodes:
            for gpu in node.gpus:
                value = values[metric](gpu)
                if value is not None:
                    labels = {"node": node.name, "gpu": str(gpu.index), "uuid": gpu.uuid}
                    lines.append(_sample(metric, labels, value))
    lines += _header(
        "gpu_slots_holder_processes",
        "GPU processes of a pod on a GPU it holds slots of (0: the slot is idle)",
        "gauge",
    )
    for node in snapshot.nodes:
        for gpu in node.gpus:
            for holder in gpu.holders:
                running = sum(1 for p in gpu.processes if p.pod == holder.pod)
                namespace, _, pod = holder.pod.partition("/")
                labels = {"node": node.name, "gpu": str(gpu.index), "namespace": namespace}
                lines.append(_sample("gpu_slots_holder_processes", {**labels, "pod": pod}, running))
    return lines


def _resource_lines(snapshot: Snapshot) -> list[str]:
    """Every GPU resource per node (MIG ones too): schedulable free and stranded slots."""
    lines: list[str] = []
    for field in ("free", "stranded"):
        metric = f"gpu_slots_resource_{field}"
        help_text = (
            "Schedulable free slots per node and GPU resource"
            if field == "free"
            else "Free slots on unschedulable nodes per node and GPU resource"
        )
        lines += _header(metric, help_text, "gauge")
        for node in snapshot.nodes:
            for name, figures in node.resources.items():
                labels = {"node": node.name, "resource": name}
                lines.append(_sample(metric, labels, getattr(figures, field)))
    lines += _header("gpu_slots_pending", "Slots wanted by unscheduled pods per resource", "gauge")
    for item in snapshot.pending_demand:
        lines.append(_sample("gpu_slots_pending", {"resource": item.resource}, item.slots))
    return lines


def _header(metric: str, help_text: str, kind: str) -> Iterable[str]:
    return [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]


def _sample(metric: str, labels: dict[str, str], value: float) -> str:
    if not labels:
        return f"{metric} {value}"
    body = ",".join(f'{key}="{_escape(val)}"' for key, val in labels.items())
    return f"{metric}{{{body}}} {value}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
