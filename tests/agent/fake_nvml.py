"""A fake `pynvml` module: every call the agent makes, raising the real NVML error classes.

Errors are built the way NVML's bindings build them (`pynvml.NVMLError(code)` returns the
matching subclass), so the agent's `except` clauses are tested against the real classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as real

GIB = 1024**3
MIB = 1024**2


@dataclass
class FakeGpu:
    """One GPU; None for a reading means NVML answers Not Supported."""

    uuid: str
    name: str = "NVIDIA A100-SXM4-80GB"
    memory_total_bytes: int | None = 80 * GIB
    memory_used_bytes: int | None = 0
    utilization_pct: int | None = 0
    mig_current: int | None = None
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    lost: bool = False
    mig_devices: list[FakeMig | None] = field(default_factory=list)  # None: an empty slot


@dataclass
class FakeMig:
    """One MIG device: NVML answers its UUID, memory, processes and attributes."""

    uuid: str
    gpu_slices: int
    compute_slices: int
    memory_size_mb: int
    gpu_instance: int
    compute_instance: int = 0
    memory_used_bytes: int | None = 0
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    lost: bool = False

    @property
    def memory_total_bytes(self) -> int:
        return self.memory_size_mb * MIB


class FakeNvml:
    """Stands in for the `pynvml` module; records calls, checks init, counts shutdowns."""

    NVMLError = real.NVMLError
    NVMLError_NotSupported = real.NVMLError_NotSupported
    NVMLError_LibraryNotFound = real.NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = real.NVMLError_DriverNotLoaded
    NVMLError_FunctionNotFound = real.NVMLError_FunctionNotFound
    NVMLError_Uninitialized = real.NVMLError_Uninitialized
    NVMLLibraryMismatchError = real.NVMLLibraryMismatchError
    NVML_DEVICE_MIG_ENABLE = real.NVML_DEVICE_MIG_ENABLE
    NVML_DEVICE_MIG_DISABLE = real.NVML_DEVICE_MIG_DISABLE

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        driver_version: str = "550.54.14",
        init_error: int | None = None,
        has_v3: bool = True,
    ) -> None:
        self.gpus = gpus
        self.driver_version = driver_version
        self.init_error = init_error
        self.has_v3 = has_v3
        self.init_calls = 0
        self.shutdown_calls = 0
        self.v2_calls = 0
        self._ready = False

    # -- library ---------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)
        self._ready = True

    def nvmlShutdown(self) -> None:
        self._check()
        self.shutdown_calls += 1
        self._ready = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check()
        return self.driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._check()
        return len(self.gpus)

    # -- devices ---------------------------------------------------------------------------
    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._check()
        gpu = self.gpus[index]
        if gpu.lost:
            raise real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)
        return gpu

    def nvmlDeviceGetUUID(self, handle: FakeGpu) -> str:
        self._check()
        return handle.uuid

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str:
        self._check()
        return handle.name

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> Any:
        self._check()
        if handle.memory_total_bytes is None or handle.memory_used_bytes is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        free = handle.memory_total_bytes - handle.memory_used_bytes
        return SimpleNamespace(
            total=handle.memory_total_bytes, free=free, used=handle.memory_used_bytes
        )

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> Any:
        self._check()
        if handle.utilization_pct is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(gpu=handle.utilization_pct, memory=0)

    def nvmlDeviceGetMigMode(self, handle: FakeGpu) -> list[int]:
        self._check()
        if handle.mig_current is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return [handle.mig_current, handle.mig_current]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeGpu) -> int:
        self._check()
        return 7 if handle.mig_devices else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeGpu, index: int) -> FakeMig:
        self._check()
        slots = handle.mig_devices
        if index >= len(slots) or slots[index] is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        found = slots[index]
        assert found is not None
        return found

    def nvmlDeviceGetAttributes(self, handle: FakeMig) -> Any:
        self._check()
        return SimpleNamespace(
            gpuInstanceSliceCount=handle.gpu_slices,
            computeInstanceSliceCount=handle.compute_slices,
            memorySizeMB=handle.memory_size_mb,
        )

    def nvmlDeviceGetGpuInstanceId(self, handle: FakeMig) -> int:
        self._check()
        return handle.gpu_instance

    def nvmlDeviceGetComputeInstanceId(self, handle: FakeMig) -> int:
        self._check()
        return handle.compute_instance

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        self._check()
        if not self.has_v3:
            # What pynvml's throwOnVersionMismatch raises on a driver without the v3 call.
            raise real.NVMLLibraryMismatchError("Unversioned function called")
        return self._processes(handle)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeGpu) -> list[Any]:
        self._check()
        self.v2_calls += 1
        return self._processes(handle)

    def _processes(self, handle: FakeGpu) -> list[Any]:
        return [
            SimpleNamespace(
                pid=pid, usedGpuMemory=used, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF
            )
            for pid, used in handle.processes
        ]

    def _check(self) -> None:
        if not self._ready:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)


def uuid_for(index: int) -> str:
    """A GPU UUID in NVML's format, stable per index."""
    return f"GPU-{index:08x}-1111-2222-3333-{index:012x}"


def eight_gpu_node(*, processes_per_gpu: int = 8, first_pid: int = 10_000) -> FakeNvml:
    """8 GPUs with `processes_per_gpu` processes each (the benchmark's node)."""
    gpus = []
    for index in range(8):
        pids = range(
            first_pid + index * processes_per_gpu, first_pid + (index + 1) * processes_per_gpu
        )
        gpus.append(
            FakeGpu(
                uuid=uuid_for(index),
                memory_used_bytes=processes_per_gpu * 2 * GIB,
                utilization_pct=50 + index,
                mig_current=real.NVML_DEVICE_MIG_DISABLE,
                processes=[(pid, 2 * GIB) for pid in pids],
            )
        )
    return FakeNvml(gpus)
