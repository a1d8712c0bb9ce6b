"""GPU health families from the agents' readings: temperature, power, throttling, ECC, XID.

Names and units as the DCGM exporter's counterparts (DCGM_FI_DEV_GPU_TEMP, _POWER_USAGE,
_CLOCK_THROTTLE_REASONS, _ECC_*_VOL/_AGG_TOTAL, _RETIRED_*, _ROW_REMAP_*, _XID_ERRORS), so a
cluster without the exporter still sees them; a value the GPU cannot give writes nothing.
"""

from __future__ import annotations

from app.domain.health import (
    THROTTLE_REASONS,
    GpuHealthReading,
    fallen_off_bus,
    hard_throttle,
    unhealthy_reasons,
)
from app.domain.snapshot import Snapshot
from app.web.views.metrics_family import Family, Labels, counter, gauge
from app.web.views.metrics_gpus import gpu_labels
from app.web.views.metrics_nodes import advertising_nodes


def _families() -> dict[str, Family]:
    families = [
        gauge("gpu_slots_gpu_temperature_celsius", "GPU core temperature"),
        gauge("gpu_slots_gpu_power_usage_watts", "GPU power draw (nvidia-smi power.draw)"),
        gauge("gpu_slots_gpu_power_limit_watts", "Enforced power limit of the GPU"),
        gauge(
            "gpu_slots_gpu_throttle_reason_active",
            "1 while the clocks-event (throttle) reason is active, by reason",
        ),
        counter(
            "gpu_slots_gpu_ecc_volatile_errors_total",
            "ECC errors since the driver loaded, by type (corrected, uncorrected)",
        ),
        counter(
            "gpu_slots_gpu_ecc_aggregate_errors_total",
            "ECC errors over the GPU's lifetime, by type (corrected, uncorrected)",
        ),
        gauge("gpu_slots_gpu_retired_pages", "Retired GPU memory pages, by cause"),
        gauge("gpu_slots_gpu_remapped_rows", "Remapped GPU memory rows, by cause"),
        gauge(
            "gpu_slots_gpu_reset_pending",
            "1 when a page retirement or row remap waits for a GPU reset",
        ),
        gauge("gpu_slots_gpu_row_remap_failed", "1 when a row remap failed"),
        gauge("gpu_slots_gpu_xid_events", "XID errors among the agent's latest, by code"),
        gauge("gpu_slots_gpu_fallen_off_bus", "1 when the GPU is lost (XID 79)"),
        gauge(
            "gpu_slots_gpu_healthy",
            "0 when the GPU is lost, has uncorrected ECC errors, a failed or pending remap or "
            "a hardware XID; 1 otherwise",
        ),
        gauge(
            "gpu_slots_gpu_hard_throttled",
            "1 while a hardware, thermal or power-brake slowdown cuts the clocks",
        ),
    ]
    return {family.name.removeprefix("gpu_slots_gpu_"): family for family in families}


def health_families(snapshot: Snapshot) -> list[Family]:
    """Every health family; a GPU whose agent sent no health adds no sample."""
    families = _families()
    for node in advertising_nodes(snapshot):
        for gpu in node.gpus:
            if gpu.health is not None:
                _add(families, gpu_labels(node, gpu), gpu.health)
    return list(families.values())


def _add(f: dict[str, Family], labels: Labels, health: GpuHealthReading) -> None:
    f["temperature_celsius"].add(labels, health.temperature_c)
    f["power_usage_watts"].add(labels, health.power_draw_w)
    f["power_limit_watts"].add(labels, health.power_limit_w)
    if health.throttle_reasons is not None:
        for reason in THROTTLE_REASONS:
            active = reason in health.throttle_reasons
            f["throttle_reason_active"].add({**labels, "reason": reason}, active)
    for kind in ("corrected", "uncorrected"):
        for period in ("volatile", "aggregate"):
            value = getattr(health, f"ecc_{period}_{kind}")
            f[f"ecc_{period}_errors_total"].add({**labels, "type": kind}, value)
    retired, remapped = f["retired_pages"], f["remapped_rows"]
    retired.add({**labels, "cause": "single_bit"}, health.retired_pages_single_bit)
    retired.add({**labels, "cause": "double_bit"}, health.retired_pages_double_bit)
    remapped.add({**labels, "cause": "correctable"}, health.remapped_rows_correctable)
    remapped.add({**labels, "cause": "uncorrectable"}, health.remapped_rows_uncorrectable)
    waiting = [health.retired_pages_pending, health.remapping_pending]
    if any(value is not None for value in waiting):
        f["reset_pending"].add(labels, any(waiting))
    f["row_remap_failed"].add(labels, health.remapping_failed)
    counts: dict[int, int] = {}
    for event in health.xid_events:
        counts[event.xid] = counts.get(event.xid, 0) + 1
    if health.xids_watched:
        for code, count in sorted(counts.items()):
            f["xid_events"].add({**labels, "xid": str(code)}, count)
    gone = fallen_off_bus(health)
    f["fallen_off_bus"].add(labels, gone)
    f["healthy"].add(labels, not gone and not unhealthy_reasons(health))
    f["hard_throttled"].add(labels, bool(hard_throttle(health)))
