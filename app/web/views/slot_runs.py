"""A GPU's slots as counted runs, for grids too large to draw one cell per slot.

A plugin config of `replicas: 100000` gave 131 MB pages (+888 MB): every slot was one cell.
Past GRID_MAX_CELLS a GPU's slots are drawn as one line per run (held by one pod, unknown,
over capacity, free, not available) with its count, so the page grows with the holders,
never with a number someone wrote into a config.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from app.domain.snapshot import GpuState
from app.i18n.translate import Translator

GRID_MAX_CELLS = 64  # one cell per slot up to this many; counts beyond


@dataclass(frozen=True)
class SlotRun:
    """`count` slots of one kind in a row, held by `pod` (if anyone)."""

    kind: str  # held | inferred | unknown | over | free | unavailable
    pod: str | None
    count: int


def is_large(gpu: GpuState) -> bool:
    return max(gpu.slots, gpu.held_slots) > GRID_MAX_CELLS


def slot_runs(gpu: GpuState, unavailable: int = 0) -> list[SlotRun]:
    """The GPU's slots as runs, in the order the grid draws cells; never one object a slot."""
    runs: list[SlotRun] = []
    position = 0
    held: list[tuple[str, str | None, int]] = [
        ("held" if h.assigned else "inferred", h.pod, max(h.slots, 0))
        for h in gpu.holders
        if h.source != "dra"
    ]
    known = sum(count for _, _, count in held)
    if gpu.held_slots > known:
        held.append(("unknown", None, gpu.held_slots - known))
    for kind, pod, count in held:
        inside = max(min(count, gpu.slots - position), 0)
        if inside:
            runs.append(SlotRun(kind, pod, inside))
        if count - inside:
            runs.append(SlotRun("over", pod, count - inside))
        position += count
    free = max(gpu.slots - position, 0)
    off = min(max(unavailable, 0), free)
    if free - off:
        runs.append(SlotRun("free", None, free - off))
    if off:
        runs.append(SlotRun("unavailable", None, off))
    return [run for run in runs if run.count > 0]


_LABELS = {
    "held": "slot_held_by",
    "unknown": "slot_held_by",
    "inferred": "slot_inferred",
    "over": "slot_over",
    "free": "slot_free",
    "unavailable": "slot_unavailable",
}


def counted_grid(gpu: GpuState, t: Translator, unavailable: int = 0) -> Markup:
    """The `<li>` lines of a large GPU's grid: one per run, with its count (escaped)."""
    lines = []
    for run in slot_runs(gpu, unavailable):
        label = escape(t(_LABELS[run.kind], pod=run.pod or "?"))
        lines.append(
            f'<li class="slot-count {escape(run.kind)}" data-testid="slot-count" '
            f'data-kind="{escape(run.kind)}" data-count="{run.count}">'
            f"<span>{run.count} &times; {label}</span></li>"
        )
    return Markup("".join(lines))
