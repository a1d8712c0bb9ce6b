"""One-node clusters whose agent reports GPU health, for the finding table's health codes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from app.domain.cluster import ClusterState
from app.domain.health import GpuHealthReading, XidEvent
from tests import factories as f
from tests.domain.worlds import world


def health_world(index: int = 0, **health: Any) -> ClusterState:
    """gpu-1 with 4 advertised A100s; GPU `index` reports `health`, the others none."""
    readings = [
        reading.model_copy(update={"health": GpuHealthReading(**health)})
        if reading.index == index
        else reading
        for reading in f.gpus(4)
    ]
    return world(readings=readings)


def xid(code: int) -> XidEvent:
    return XidEvent(xid=code, at=f.NOW - timedelta(minutes=1))


HEALTH_CASES: list[tuple[str, Any, Any]] = [
    (
        "gpu-fallen-off-bus",
        lambda: health_world(lost=True),
        lambda: health_world(temperature_c=40),
    ),
    (
        "gpu-unhealthy",
        lambda: health_world(ecc_volatile_uncorrected=3, xid_events=[xid(48)]),
        lambda: health_world(ecc_volatile_corrected=3, xid_events=[xid(13)]),
    ),
    (
        "gpu-throttled-hard",
        lambda: health_world(throttle_reasons=["hw_slowdown"]),
        lambda: health_world(throttle_reasons=["gpu_idle", "sw_power_cap"]),
    ),
]
