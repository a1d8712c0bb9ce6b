"""What a simulated agent's NVML says about each GPU's health, and the faults a test sets.

A busy GPU runs warmer and draws more power; an idle one reports the `gpu_idle` reason.
A GPU the scenario marks `healthy: false` (the plugin withdrew it) reports the XID 48 and
uncorrected ECC errors that made the plugin do so. `set()` overrides any field of one GPU
(e.g. `lost=True` with XID 79), as a fault on a real node would, until `clear()`.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from app.domain.health import GpuHealthReading, XidEvent

POWER_LIMIT_W = 400.0


class SimHealth:
    """Per-GPU health faults set by tests or scenarios, on top of the healthy baseline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, int], dict[str, Any]] = {}

    def set(self, node: str, index: int, **fields: Any) -> None:
        """Override health fields of GPU `index` on `node` (GpuHealthReading's names)."""
        GpuHealthReading(**fields)  # refuse a field or value NVML could never report
        with self._lock:
            self._faults[(node, index)] = {**self._faults.get((node, index), {}), **fields}

    def clear(self, node: str, index: int) -> None:
        with self._lock:
            self._faults.pop((node, index), None)

    def reading(
        self, node: str, index: int, *, busy: int, healthy: bool, now: datetime
    ) -> GpuHealthReading:
        """The GPU's health now: the baseline for its load, then any fault set on it."""
        fields: dict[str, Any] = {
            "temperature_c": min(34 + 11 * busy, 84),
            "power_draw_w": min(62.5 + 140.0 * busy, POWER_LIMIT_W),
            "power_limit_w": POWER_LIMIT_W,
            "throttle_reasons": [] if busy else ["gpu_idle"],
            "ecc_enabled": True,
            "ecc_volatile_corrected": 0,
            "ecc_volatile_uncorrected": 0 if healthy else 2,
            "ecc_aggregate_corrected": 3,
            "ecc_aggregate_uncorrected": 0 if healthy else 2,
            "remapped_rows_correctable": 0,
            "remapped_rows_uncorrectable": 0 if healthy else 1,
            "remapping_pending": not healthy,
            "remapping_failed": False,
            "xid_events": [] if healthy else [XidEvent(xid=48, at=now)],
            "xids_watched": True,
        }
        with self._lock:
            fields.update(self._faults.get((node, index), {}))
        return GpuHealthReading(**fields)
