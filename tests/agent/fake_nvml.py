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
    health: FakeHealth | None = None  # None: every health call answers Not Supported


@dataclass
class FakeHealth:
    """What NVML answers about a GPU's health; None for a reading means Not Supported."""

    temperature_c: int | None = 40
    power_mw: int | None = 75_000
    power_limit_mw: int | None = 300_000
    clock_reasons: int | None = 0
    event_reasons_missing: bool = False  # an older driver: only the `Throttle` call
    ecc_enabled: bool | None = True
    # (error type, counter type) -> count: NVML_MEMORY_ERROR_TYPE_*, NVML_*_ECC
    ecc: dict[tuple[int, int], int] = field(default_factory=dict)
    retired_single: int | None = 0
    retired_double: int | None = 0
    retired_pending: bool | None = False
    remapped: tuple[int, int, bool, bool] | None = None
    xid_supported: bool = True
    lost: bool = False  # the handle answers, its health calls say GPU_IS_LOST


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
    NVMLError_Timeout = real.NVMLError_Timeout
    NVMLError_GpuIsLost = real.NVMLError_GpuIsLost
    NVML_DEVICE_MIG_ENABLE = real.NVML_DEVICE_MIG_ENABLE
    NVML_DEVICE_MIG_DISABLE = real.NVML_DEVICE_MIG_DISABLE
    NVML_FEATURE_ENABLED = real.NVML_FEATURE_ENABLED
    NVML_FEATURE_DISABLED = real.NVML_FEATURE_DISABLED
    NVML_TEMPERATURE_GPU = real.NVML_TEMPERATURE_GPU
    NVML_MEMORY_ERROR_TYPE_CORRECTED = real.NVML_MEMORY_ERROR_TYPE_CORRECTED
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = real.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    NVML_VOLATILE_ECC = real.NVML_VOLATILE_ECC
    NVML_AGGREGATE_ECC = real.NVML_AGGREGATE_ECC
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = (
        real.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    )
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = (
        real.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
    )
    nvmlEventTypeXidCriticalError = real.nvmlEventTypeXidCriticalError
    nvmlClocksEventReasonHwSlowdown = real.nvmlClocksEventReasonHwSlowdown
    nvmlClocksEventReasonSwPowerCap = real.nvmlClocksEventReasonSwPowerCap
    nvmlClocksEventReasonHwThermalSlowdown = real.nvmlClocksEventReasonHwThermalSlowdown

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
        self.event_sets: list[list[tuple[FakeGpu, int]]] = []  # created sets, pending XIDs
        self.freed_sets = 0
        self._registered: dict[int, list[str]] = {}  # set -> registered GPU UUIDs

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

    # -- health ------------------------------------------------------------------------------
    def _health(self, handle: FakeGpu) -> FakeHealth:
        self._check()
        if handle.health is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        if handle.health.lost:
            raise real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)
        return handle.health

    @staticmethod
    def _given(value: Any) -> Any:
        if value is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetTemperature(self, handle: FakeGpu, sensor: int) -> int:
        assert sensor == real.NVML_TEMPERATURE_GPU
        return int(self._given(self._health(handle).temperature_c))

    def nvmlDeviceGetPowerUsage(self, handle: FakeGpu) -> int:
        return int(self._given(self._health(handle).power_mw))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeGpu) -> int:
        return int(self._given(self._health(handle).power_limit_mw))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeGpu) -> int:
        if self._health(handle).event_reasons_missing:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        return int(self._given(self._health(handle).clock_reasons))

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeGpu) -> int:
        return int(self._given(self._health(handle).clock_reasons))

    def nvmlDeviceGetEccMode(self, handle: FakeGpu) -> list[int]:
        enabled = self._given(self._health(handle).ecc_enabled)
        mode = real.NVML_FEATURE_ENABLED if enabled else real.NVML_FEATURE_DISABLED
        return [mode, mode]

    def nvmlDeviceGetTotalEccErrors(self, handle: FakeGpu, kind: int, counter: int) -> int:
        health = self._health(handle)
        if not health.ecc_enabled:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return health.ecc.get((kind, counter), 0)

    def nvmlDeviceGetRetiredPages(self, handle: FakeGpu, cause: int) -> list[int]:
        health = self._health(handle)
        single = cause == real.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
        count = self._given(health.retired_single if single else health.retired_double)
        return [0x1000 * n for n in range(count)]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: FakeGpu) -> int:
        pending = self._given(self._health(handle).retired_pending)
        return real.NVML_FEATURE_ENABLED if pending else real.NVML_FEATURE_DISABLED

    def nvmlDeviceGetRemappedRows(self, handle: FakeGpu) -> tuple[int, int, bool, bool]:
        remapped: tuple[int, int, bool, bool] = self._given(self._health(handle).remapped)
        return remapped

    # -- events ------------------------------------------------------------------------------
    def nvmlEventSetCreate(self) -> int:
        self._check()
        self.event_sets.append([])
        return len(self.event_sets) - 1

    def nvmlDeviceRegisterEvents(self, handle: FakeGpu, types: int, event_set: int) -> None:
        self._check()
        assert types == real.nvmlEventTypeXidCriticalError
        if handle.health is None or not handle.health.xid_supported:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        self._registered.setdefault(event_set, []).append(handle.uuid)

    def raise_xid(self, gpu: FakeGpu, xid: int) -> None:
        """The driver raises an XID on `gpu`: every set it is registered with gets it."""
        for event_set, uuids in self._registered.items():
            if gpu.uuid in uuids:
                self.event_sets[event_set].append((gpu, xid))

    def nvmlEventSetWait_v2(self, event_set: int, timeout_ms: int) -> Any:
        self._check()
        assert timeout_ms == 0  # the agent never waits
        pending = self.event_sets[event_set]
        if not pending:
            raise real.NVMLError(real.NVML_ERROR_TIMEOUT)
        gpu, xid = pending.pop(0)
        return SimpleNamespace(
            device=gpu, eventType=real.nvmlEventTypeXidCriticalError, eventData=xid
        )

    def nvmlEventSetFree(self, event_set: int) -> None:
        self.freed_sets += 1
        self._registered.pop(event_set, None)

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
