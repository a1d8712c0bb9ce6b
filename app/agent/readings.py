"""Raw GPU readings as a reader sees them, before processes are attributed to pods.

Both readers (NVML and nvidia-smi) return these, so attribution and report building
never care which one ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.domain.health import GpuHealthReading
from app.errors import GpuReadError

MigMode = Literal["enabled", "disabled"]


@dataclass(frozen=True, slots=True)
class RawProcess:
    """A compute process on a GPU: host PID, its GPU memory, the name the reader gave."""

    pid: int
    used_memory_mib: int | None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class RawMig:
    """One MIG device of a MIG-enabled GPU (NVML MIG device handle)."""

    uuid: str
    profile: str
    gpu_instance: int | None
    compute_instance: int | None
    memory_total_mib: int | None
    memory_used_mib: int | None
    processes: tuple[RawProcess, ...] = ()


@dataclass(frozen=True, slots=True)
class RawGpu:
    """One physical GPU; a value the reader could not get is None."""

    index: int
    uuid: str
    name: str
    memory_total_mib: int | None
    memory_used_mib: int | None
    utilization_pct: int | None
    mig_mode: MigMode | None
    processes: tuple[RawProcess, ...] = ()
    mig_devices: tuple[RawMig, ...] = ()
    health: GpuHealthReading | None = None


@dataclass(frozen=True, slots=True)
class RawReadings:
    """Everything one reader saw in one pass."""

    source: Literal["nvml", "nvidia-smi"]
    driver_version: str | None
    gpus: tuple[RawGpu, ...]
    problems: tuple[str, ...] = field(default=())


def percent(value: int | None) -> int | None:
    """A utilization reading clamped to 0-100; None stays None."""
    return None if value is None else max(0, min(100, int(value)))


def mig_mode(text: str | None) -> MigMode | None:
    """nvidia-smi's MIG mode (`Enabled`, `Disabled`, any case); None for `N/A` or nothing."""
    lowered = (text or "").lower()
    if lowered == "enabled":
        return "enabled"
    return "disabled" if lowered == "disabled" else None


class ReaderUnavailableError(GpuReadError):
    """A reader cannot be used here; `driver_missing` when no NVIDIA driver is installed."""

    def __init__(self, message: str, *, driver_missing: bool = False) -> None:
        super().__init__(message)
        self.driver_missing = driver_missing
