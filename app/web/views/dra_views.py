"""Page helpers for GPUs handed out through DRA: device cells and claim lines.

A DRA GPU is drawn in the slot grid's language: one cell per device a driver publishes
for it (one for a whole GPU, one per MIG device), filled when a claim holds it, and under
it one line per claim with its namespace/name, sharing strategy and pods.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from app.domain.snapshot import GpuState, NodeState
from app.i18n.translate import Translator
from app.web.views.abandon import check


@dataclass(frozen=True)
class ClaimLine:
    claim: str  # namespace/name
    strategy: str  # Exclusive | TimeSlicing | MPS
    pods: tuple[str, ...]


def claim_lines(gpu: GpuState) -> list[ClaimLine]:
    """The claims holding this GPU's devices, with their pods (none for an unreserved one)."""
    pods: dict[str, list[str]] = {}
    strategies: dict[str, str] = {}
    for holder in gpu.holders:
        if holder.source != "dra" or holder.claim is None:
            continue
        pods.setdefault(holder.claim, []).append(holder.pod)
        if holder.sharing is not None:
            strategies[holder.claim] = holder.sharing.strategy
    for device in gpu.dra_devices:
        for claim in device.claims:
            pods.setdefault(claim, [])
    return [
        ClaimLine(claim, strategies.get(claim, "Exclusive"), tuple(sorted(set(members))))
        for claim, members in sorted(pods.items())
    ]


GRID_MAX_DEVICES = 64  # one cell per device up to this many; counted lines beyond


def dra_grid(gpu: GpuState, t: Translator) -> Markup:
    """The `<li>` cells of a GPU's DRA devices; every value escaped (cluster data).

    Past GRID_MAX_DEVICES (a driver publishing every MIG placement: 7,560 devices on a node
    made a 20 MB page), one counted line per kind: held, shared, free.
    """
    check()  # a rendering ahead for a replaced snapshot stops here (app.web.views.abandon)
    lines = {line.claim: line for line in claim_lines(gpu)}
    if len(gpu.dra_devices) > GRID_MAX_DEVICES:
        return _counted(gpu, lines, t)
    cells = []
    for device in gpu.dra_devices:
        kind = _kind(device.claims, lines)
        if kind == "free":
            label = escape(t("dra_device_free", device=device.name))
        else:
            label = escape(
                t("dra_device_claimed", device=device.name, claims=", ".join(device.claims))
            )
        cells.append(
            f'<li class="slot dra {kind}" data-testid="dra-device-cell" '
            f'data-device="{escape(device.name)}" data-held="{str(bool(device.claims)).lower()}" '
            f'title="{label}"><span class="vh">{label}</span></li>'
        )
    return Markup("".join(cells))


def _kind(claims: tuple[str, ...] | list[str], lines: dict[str, ClaimLine]) -> str:
    if not claims:
        return "free"
    shared = len(claims) > 1 or any(
        lines[c].strategy != "Exclusive" or len(lines[c].pods) > 1 for c in claims if c in lines
    )
    return "shared" if shared else "held"


def _counted(gpu: GpuState, lines: dict[str, ClaimLine], t: Translator) -> Markup:
    counts: dict[str, int] = {"held": 0, "shared": 0, "free": 0}
    for device in gpu.dra_devices:
        counts[_kind(device.claims, lines)] += 1
    label = {"held": "dra_devices_held", "shared": "dra_devices_shared", "free": "dra_devices_free"}
    return Markup(
        "".join(
            f'<li class="slot-count dra {kind}" data-testid="dra-device-count" '
            f'data-kind="{kind}" data-count="{count}">'
            f"<span>{escape(t.n(label[kind], count))}</span></li>"
            for kind, count in counts.items()
            if count
        )
    )


def dra_held(gpu: GpuState) -> int:
    return len([d for d in gpu.dra_devices if d.claims])


def node_dra_devices(node: NodeState) -> tuple[int, int]:
    """The node's DRA devices and how many of them a claim holds."""
    devices = [d for gpu in node.gpus for d in gpu.dra_devices] + list(node.dra_devices)
    return len(devices), len([d for d in devices if d.claims])
