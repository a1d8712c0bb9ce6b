"""What the page templates call: node cards, slot grids, memory bars, groups, finding keys.

Pure helpers over snapshot models, gathered in one namespace (`views`) so every template
reads `v.<helper>`; the hot loops of big pages (the slot grid) build their markup here.
Figures are written by `figures`, sparklines drawn by `sparks`, diffs by `diffs`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from types import SimpleNamespace

from markupsafe import Markup, escape

from app.domain.changes.split_scope import split_refusal
from app.domain.findings.usage import duration_text
from app.domain.snapshot import SEVERITY_RANK, Finding, GpuState, NodeState, Severity, Snapshot
from app.i18n.translate import Translator
from app.web.views import figures
from app.web.views.abandon import check
from app.web.views.dra_views import claim_lines, dra_grid, dra_held, node_dra_devices
from app.web.views.evidence import evidence_rows
from app.web.views.finding_groups import cause_code, element_id, finding_key, grouped, roots
from app.web.views.finding_text import (
    demand_reason,
    finding_explanation,
    finding_title,
    remedy_text,
)
from app.web.views.health_view import health_items
from app.web.views.node_window import slot_bar
from app.web.views.slot_runs import counted_grid, is_large
from app.web.views.sparks import spark_svg


def most_severe(findings: Iterable[Finding], *, limit: int | None = None) -> list[Finding]:
    """Findings, errors first, then warnings, then info; stable within a severity."""
    ordered = sorted(findings, key=lambda finding: SEVERITY_RANK[finding.severity])
    return ordered if limit is None else ordered[:limit]


def worst_finding(node: NodeState) -> Finding | None:
    """The node's most severe root finding (any scope; not one that follows from another), or
    None."""
    return min(roots(node.findings), key=lambda f: SEVERITY_RANK[f.severity], default=None)


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
class SlotCell:
    """One slot of a GPU as drawn: who holds it, if anyone."""

    kind: str  # held | inferred | free | over | unknown
    pod: str | None


def slot_cells(gpu: GpuState) -> list[SlotCell]:
    """One cell per slot; cells held past the GPU's slots are drawn as over capacity."""
    held: list[SlotCell] = []
    for holder in gpu.holders:
        if holder.source == "dra":
            continue  # a DRA claim holds a device, drawn by dra_views.dra_grid
        kind = "held" if holder.assigned else "inferred"
        held.extend(SlotCell(kind, holder.pod) for _ in range(max(holder.slots, 0)))
    while len(held) < gpu.held_slots:
        held.append(SlotCell("unknown", None))
    cells = [
        cell if index < gpu.slots else SlotCell("over", cell.pod) for index, cell in enumerate(held)
    ]
    cells.extend(SlotCell("free", None) for _ in range(gpu.slots - len(cells)))
    return cells


SLOT_LABELS = {
    "held": "slot_held_by",
    "unknown": "slot_held_by",
    "inferred": "slot_inferred",
    "over": "slot_over",
}


def slot_grid(gpu: GpuState, t: Translator, unavailable: int = 0) -> Markup:
    """The `<li>` cells of a GPU's slot grid; the hot loop of big pages, so built here.

    Every value written into the markup goes through `escape` (pod names are cluster data),
    exactly as the autoescaping template would do it. A GPU of more than GRID_MAX_CELLS
    slots is drawn as counted runs (app.web.views.slot_runs), never one cell per slot.
    """
    check()  # a rendering ahead for a replaced snapshot stops here (app.web.views.abandon)
    if is_large(gpu):
        return counted_grid(gpu, t, unavailable)
    free = (
        '<li class="slot free" data-testid="slot-cell" data-held="false" '
        f'title="{escape(t("slot_free"))}"></li>'
    )
    cells = []
    drawn = slot_cells(gpu)
    free_cells = sum(1 for cell in drawn if cell.kind == "free")
    off = (
        '<li class="slot unavailable" data-testid="slot-cell" data-held="false" '
        f'data-unavailable="true" title="{escape(t("slot_unavailable"))}">'
        f'<span class="vh">{escape(t("slot_unavailable"))}</span></li>'
    )
    for cell in drawn:
        if cell.kind == "free":
            cells.append(off if free_cells <= unavailable else free)
            free_cells -= 1
            continue
        label = escape(t(SLOT_LABELS[cell.kind], pod=cell.pod or "?"))
        cells.append(
            f'<li class="slot {escape(cell.kind)}" data-testid="slot-cell" data-held="true" '
            f'title="{label}"><span class="vh">{label}</span></li>'
        )
    return Markup("".join(cells))


@dataclass(frozen=True)
class MemorySplit:
    """A GPU's memory as bar segments (percent widths summing to 100) and GiB figures."""

    pods_pct: int
    host_pct: int
    other_pct: int
    free_pct: int
    pods_gib: str
    host_gib: str
    free_gib: str
    total_gib: str


def memory_split(gpu: GpuState) -> MemorySplit | None:
    """The memory bar of a GPU; None when the agent could not read its memory."""
    total = gpu.memory_total_mib
    if not total or total <= 0:
        return None
    pods = max(gpu.memory_pods_mib, 0)
    host = max(gpu.memory_host_mib, 0)
    used = max(gpu.memory_used_mib or 0, pods + host)
    other = used - pods - host
    free = max(total - used, 0)

    def pct(part: int) -> int:
        return min(100, part * 100 // total)

    pods_pct, host_pct, other_pct = pct(pods), pct(host), pct(other)
    free_pct = max(0, 100 - pods_pct - host_pct - other_pct)
    return MemorySplit(
        pods_pct,
        host_pct,
        other_pct,
        free_pct,
        figures.mib(pods),
        figures.mib(host),
        figures.mib(free),
        figures.mib(total),
    )


def severity_of(gpu: GpuState) -> str:
    return gpu.worst_severity.value if gpu.worst_severity is not None else "none"


def gpu_groups(node: NodeState) -> list[tuple[str, list[GpuState]]]:
    """The node's GPUs by role, advertised first; empty groups left out."""
    groups = [
        (role, [gpu for gpu in node.gpus if gpu.role == role])
        for role in ("advertised", "dra", "failing", "host", "unknown")
    ]
    return [(role, gpus) for role, gpus in groups if gpus]


def pod_gpus(node: NodeState) -> dict[str, list[str]]:
    """Per pod, the GPUs it holds: `0`, or `0 MIG 1g.10gb` for a MIG device of GPU 0."""
    found: dict[str, list[str]] = {}
    for gpu in node.gpus:
        on_mig = {h.pod for d in gpu.mig_devices for h in d.holders}
        for device in gpu.mig_devices:
            for holder in device.holders:
                found.setdefault(holder.pod, []).append(f"{gpu.index} MIG {device.profile}")
        for holder in gpu.holders:
            if holder.pod not in on_mig:
                found.setdefault(holder.pod, []).append(str(gpu.index))
    return found


def unplaced_pods(node: NodeState) -> list[str]:
    """Pods holding slots of the node that no GPU's holders name (assignment not known yet)."""
    placed = {holder.pod for gpu in node.gpus for holder in gpu.holders if holder.source != "dra"}
    return [pod.pod for pod in node.pods if pod.slots > 0 and pod.pod not in placed]


def where(finding: Finding) -> str:
    """The node/GPU/pod a finding is about, in one line."""
    parts = [part for part in (finding.node, finding.gpu_uuid, finding.pod) if part]
    return " · ".join(parts)


def mode_counts(snapshot: Snapshot) -> list[tuple[str, int, int]]:
    """The GPU nodes per mode, most first: (mode, replicas, nodes); a DRA node as "dra".

    The overview's headline says "Mixed" with these parts, so no single mode stands for a
    cluster whose nodes differ.
    """
    counts: Counter[tuple[str, int]] = Counter(
        ("dra", 1) if node.allocation == "dra" else (node.mode.value, node.replicas)
        for node in snapshot.nodes
        if node.gpu_node
    )
    return [(mode, replicas, n) for (mode, replicas), n in counts.most_common()]


# The helpers the templates call, by their own names (`v.<name>`).
_HELPERS = (
    *(worst_finding, plugin_state, plugin_ok, gpus_editable, gpu_severity, unavailable_slots),
    *(figures.mib, figures.seconds, figures.age, spark_svg, finding_key, most_severe),
    *(slot_cells, slot_grid, memory_split, severity_of, gpu_groups, where, unplaced_pods),
    *(slot_bar, dra_grid, dra_held, claim_lines, node_dra_devices, health_items),
    *(finding_title, finding_explanation, remedy_text, duration_text),
    demand_reason,
    mode_counts,
    evidence_rows,
    *(grouped, roots, element_id, cause_code),
)
views = SimpleNamespace(**{helper.__name__: helper for helper in _HELPERS})
