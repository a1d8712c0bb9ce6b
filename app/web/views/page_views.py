"""View helpers for honest node cards: worst finding, plugin state, unavailable slots, sparklines.

Pure functions of the snapshot (and the idle history's points), called by the templates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from app.domain.changes.split_scope import split_refusal
from app.domain.snapshot import SEVERITY_RANK, Finding, GpuState, NodeState, Severity, Snapshot
from app.domain.usage.idle import Point


def worst_finding(node: NodeState) -> Finding | None:
    """The node's most severe finding (any scope), or None."""
    return min(node.findings, key=lambda f: SEVERITY_RANK[f.severity], default=None)


def plugin_state(node: NodeState) -> str | None:
    """What `kubectl get pods` would show for the node's plugin pod: CrashLoopBackOff, ..."""
    pod = node.plugin_pod
    if pod is None:
        return None
    return pod.state or pod.phase


def gpus_editable(node: NodeState, snapshot: Snapshot) -> bool:
    """GPU Slots may change this node's GPUs (no "Edit GPUs" link where it would refuse)."""
    plugin = snapshot.plugin
    return node.gpu_node and split_refusal(node, target=f"{plugin.namespace}/{plugin.name}") is None


def plugin_ok(node: NodeState) -> bool:
    return node.plugin_pod is not None and node.plugin_pod.ready


def gpu_severity(node: NodeState, gpu: GpuState) -> str:
    """The GPU's worst finding, counting the node's own findings for GPUs Kubernetes should get.

    A crash-looping plugin or an unhealthy device is a node finding, but every advertised or
    failing GPU of that node suffers it: the GPU is not drawn OK.
    """
    ranks = [SEVERITY_RANK[gpu.worst_severity]] if gpu.worst_severity is not None else []
    if gpu.role in ("advertised", "failing"):
        ranks.extend(
            SEVERITY_RANK[f.severity]
            for f in node.findings
            if f.gpu_uuid is None and f.pod is None and f.severity is not Severity.INFO
        )
    if not ranks:
        return "none"
    return next(s for s, r in SEVERITY_RANK.items() if r == min(ranks)).value


def unavailable_slots(node: NodeState) -> dict[str, int]:
    """Per GPU, the empty cells that are not really free (unhealthy device, failing plugin).

    Cells drawn free add up to more than the node's free slots when allocatable is below what
    the GPUs should give; the excess is marked unavailable, from the last GPU backwards
    (the plugin does not say which device is unhealthy).
    """
    empty = {
        gpu.uuid: max(gpu.slots - gpu.held_slots, 0)
        for gpu in node.gpus
        if gpu.role == "advertised"
    }
    excess = sum(empty.values()) - max(node.free or 0, 0)
    found: dict[str, int] = {}
    for gpu in reversed(node.gpus):
        if excess <= 0:
            break
        take = min(empty.get(gpu.uuid, 0), excess)
        if take:
            found[gpu.uuid] = take
            excess -= take
    return found


@dataclass(frozen=True)
class Spark:
    """A utilization sparkline: an SVG polyline's points and the latest value."""

    points: str
    latest: int | None
    count: int


SPARK_W, SPARK_H = 120, 24


def spark(points: Sequence[Point]) -> Spark | None:
    """Utilization over the last hour as polyline points in a 120x24 box; None without data."""
    known = [p for p in points if p.utilization_pct is not None]
    if len(known) < 2:
        return None
    start, end = known[0].at, known[-1].at
    span_s = max((end - start).total_seconds(), 1.0)
    coords = []
    for point in known:
        x = (point.at - start).total_seconds() / span_s * SPARK_W
        y = SPARK_H - (point.utilization_pct or 0) / 100 * (SPARK_H - 2) - 1
        coords.append(f"{x:.1f},{y:.1f}")
    return Spark(" ".join(coords), known[-1].utilization_pct, len(known))


def spark_svg(value: Spark, label: str) -> Markup:
    """The sparkline as inline SVG (no style attribute: the CSP forbids inline styles)."""
    return Markup(
        f'<svg class="spark" viewBox="0 0 {SPARK_W} {SPARK_H}" width="{SPARK_W}" '
        f'height="{SPARK_H}" role="img" aria-label="{escape(label)}">'
        f'<polyline class="spark-line" fill="none" points="{escape(value.points)}"/></svg>'
    )


def mib(value: int | None) -> str:
    """Memory in GiB with one decimal, the one unit the pages use (tables and cards alike)."""
    return "?" if value is None else f"{value / 1024:.1f}"


@dataclass(frozen=True)
class DiffLine:
    kind: str  # add | del | hunk | file | same
    text: str


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff as lines with their kind, so the page can colour them."""
    found = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        found.append(DiffLine(kind, line))
    return found


def changed_count(diff: str) -> int:
    return sum(1 for line in diff_lines(diff) if line.kind in ("add", "del"))
