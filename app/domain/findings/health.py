"""Findings where a GPU's health contradicts its accounting (issue 31).

Kubernetes keeps counting the slots of a GPU that has fallen off the bus, carries
uncorrected ECC errors or is throttled hard: pods land on it and fail or crawl. Each rule
looks at a GPU that has slots (free or held) and the agent's health readings of it.
"""

from __future__ import annotations

from app.domain.accounting.facts import NodeFacts
from app.domain.accounting.ledger.models import GpuFacts
from app.domain.findings.catalogue import gpu_finding
from app.domain.findings.remedies import Remedy, remedy
from app.domain.findings.shell import sh
from app.domain.health import (
    GpuHealthReading,
    fallen_off_bus,
    hard_throttle,
    hardware_xids,
    unhealthy_reasons,
)
from app.domain.snapshot import EvidenceValue, Finding

_MEMORY_ERRORS = ("ecc_volatile_uncorrected", "ecc_aggregate_uncorrected", "remapping_failed")
_THROTTLE_READINGS = ("temperature_c", "power_draw_w", "power_limit_w")


def health_findings(node: NodeFacts) -> list[Finding]:
    """The health rules on every GPU of the node that Kubernetes counts slots on."""
    found: list[Finding] = []
    counted = [gpu for gpu in node.gpus if gpu.slots > 0 or _held(gpu) > 0]
    sick = [gpu for gpu in counted if gpu.reading.health and _sick(gpu.reading.health)]
    if _already_withdrawn(node, sick):
        sick = []  # the plugin took them out of allocatable: unhealthy-devices says so
    for gpu in counted:
        health = gpu.reading.health
        if health is None:
            continue
        if gpu in sick and fallen_off_bus(health):
            found.append(_fallen_off_bus(node, gpu, health, _held(gpu)))
        elif gpu in sick:
            found.append(_unhealthy(node, gpu, health, _held(gpu), unhealthy_reasons(health)))
        if throttle := hard_throttle(health):
            found.append(_throttled(node, gpu, health, _held(gpu), throttle))
    return found


def _sick(health: GpuHealthReading) -> bool:
    return fallen_off_bus(health) or bool(unhealthy_reasons(health))


def _already_withdrawn(node: NodeFacts, sick: list[GpuFacts]) -> bool:
    """Whether the plugin already withdrew the sick GPUs: capacity exceeds allocatable by
    at least their slots (the device plugin marks a GPU unhealthy on some XIDs)."""
    if not sick or node.capacity is None or node.allocatable is None:
        return False
    return node.capacity - node.allocatable >= sum(gpu.slots for gpu in sick)


def _held(gpu: GpuFacts) -> int:
    return sum(h.slots for h in gpu.holders) + sum(
        h.slots for device in gpu.mig_devices for h in device.holders
    )


def _slots_evidence(gpu: GpuFacts, held: int) -> dict[str, EvidenceValue]:
    return {
        "gpu_index": gpu.reading.index,
        "slots": gpu.slots,
        "held_slots": held,
        "free_slots": max(gpu.slots - held, 0),
    }


def _drain(node: NodeFacts) -> str:
    return f"kubectl cordon {sh(node.name)}; kubectl drain {sh(node.name)} --ignore-daemonsets"


def _readings(health: GpuHealthReading, names: tuple[str, ...]) -> dict[str, EvidenceValue]:
    return {name: getattr(health, name) for name in names}


def _health_finding(
    code: str, node: NodeFacts, gpu: GpuFacts, evidence: dict[str, EvidenceValue], fix: Remedy
) -> Finding:
    return gpu_finding(code, evidence, fix, node=node.name, gpu=gpu.uuid)


def _fallen_off_bus(node: NodeFacts, gpu: GpuFacts, health: GpuHealthReading, held: int) -> Finding:
    evidence = {**_slots_evidence(gpu, held), "lost": health.lost, "xids": _xids(health)}
    return _health_finding(
        "gpu-fallen-off-bus", node, gpu, evidence, remedy(_drain(node), "gpu-reboot")
    )


def _unhealthy(
    node: NodeFacts, gpu: GpuFacts, health: GpuHealthReading, held: int, reasons: list[str]
) -> Finding:
    evidence: dict[str, EvidenceValue] = {
        **_slots_evidence(gpu, held),
        "reasons": ", ".join(reasons),
        **_readings(health, _MEMORY_ERRORS),
        "reset_pending": bool(health.remapping_pending or health.retired_pages_pending),
        "xids": _xids(health),
    }
    command = f"{_drain(node)}; nvidia-smi -r -i {gpu.reading.index}"
    fix = remedy(command, "gpu-reset", node=node.name)
    return _health_finding("gpu-unhealthy", node, gpu, evidence, fix)


def _throttled(
    node: NodeFacts, gpu: GpuFacts, health: GpuHealthReading, held: int, reasons: list[str]
) -> Finding:
    evidence: dict[str, EvidenceValue] = {
        **_slots_evidence(gpu, held),
        "throttle_reasons": ", ".join(reasons),
        **_readings(health, _THROTTLE_READINGS),
    }
    command = f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {gpu.reading.index}"
    fix = remedy(command, "gpu-cooling", node=node.name)
    return _health_finding("gpu-throttled-hard", node, gpu, evidence, fix)


def _xids(health: GpuHealthReading) -> str | None:
    codes = hardware_xids(health)
    return ", ".join(str(code) for code in codes) or None
