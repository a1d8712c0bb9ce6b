"""The NVML reader: every GPU on the node through the `pynvml` module.

NVML is initialised lazily, once, and shut down by `close()`. A value NVML cannot give
(Not Supported on unified-memory or MIG-enabled GPUs, no permission, ...) becomes None,
never an exception, so one odd GPU never blanks the report. Every call goes through the
module object (`nvml.nvmlX(...)`) so tests can pass a fake module.

The agent applies no device filter of its own: NVML lists every GPU the container can
reach. The chart must run the agent with `NVIDIA_VISIBLE_DEVICES=all` (and no
`nvidia.com/gpu` request) so that GPUs hidden from the device plugin are read too.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from app.agent.nvml_events import XidWatcher
from app.agent.nvml_health import read_health
from app.agent.readings import (
    MigMode,
    RawGpu,
    RawMig,
    RawProcess,
    RawReadings,
    ReaderUnavailableError,
    percent,
)
from app.clock import utc_now
from app.domain.health import GpuHealthReading

_MIB = 1024 * 1024
_T = TypeVar("_T")


class NvmlReader:
    """Reads all GPUs through NVML; one instance per agent process."""

    label = "NVML"

    def __init__(
        self, *, nvml: Any | None = None, now: Callable[[], datetime] | None = None
    ) -> None:
        self._nvml = nvml
        self._now = now or utc_now
        self._initialised = False
        self._processes_v2 = False
        self._xids: XidWatcher | None = None
        self._known: dict[int, tuple[str, str]] = {}  # index -> (UUID, name) once read

    def read(self) -> RawReadings:
        """One pass over every GPU; raises ReaderUnavailableError when NVML cannot start."""
        nvml = self._ensure_initialised()
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as exc:
            raise ReaderUnavailableError(f"NVML cannot count GPUs: {exc}") from exc
        driver = _optional(nvml, lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        if self._xids is not None:
            self._xids.drain()
        gpus: list[RawGpu] = []
        problems: list[str] = []
        for index in range(count):
            try:
                gpus.append(self._read_gpu(nvml, index))
            except nvml.NVMLError as exc:
                lost = self._lost_gpu(nvml, index, exc)
                if lost is not None:
                    gpus.append(lost)
                problems.append(f"GPU {index} unreadable through NVML: {exc}")
        return RawReadings("nvml", driver, tuple(gpus), tuple(problems))

    def _lost_gpu(self, nvml: Any, index: int, exc: Exception) -> RawGpu | None:
        """A GPU read before that NVML now calls lost: it is reported, fallen off the bus."""
        known = self._known.get(index)
        if known is None or not isinstance(exc, nvml.NVMLError_GpuIsLost):
            return None
        uuid, name = known
        xids = self._xids
        events = xids.events(uuid) if xids is not None else []
        watched = xids is not None and xids.watching(uuid)
        health = GpuHealthReading(lost=True, xid_events=events[-64:], xids_watched=watched)
        return RawGpu(index, uuid, name, None, None, None, None, health=health)

    def close(self) -> None:
        """Shut NVML down if this reader started it; safe to call more than once."""
        if not self._initialised or self._nvml is None:
            return
        self._initialised = False
        if self._xids is not None:
            self._xids.close()
            self._xids = None
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlShutdown()

    def _ensure_initialised(self) -> Any:
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError as exc:
                raise ReaderUnavailableError("pynvml module not installed") from exc
        nvml = self._nvml
        if not self._initialised:
            try:
                nvml.nvmlInit()
            except nvml.NVMLError_LibraryNotFound as exc:
                message = "NVML library not found"
                raise ReaderUnavailableError(message, driver_missing=True) from exc
            except nvml.NVMLError_DriverNotLoaded as exc:
                message = "NVIDIA driver not loaded"
                raise ReaderUnavailableError(message, driver_missing=True) from exc
            except nvml.NVMLError as exc:
                raise ReaderUnavailableError(f"NVML init failed: {exc}") from exc
            self._initialised = True
            self._xids = XidWatcher(nvml, now=self._now)
        return nvml

    def _read_gpu(self, nvml: Any, index: int) -> RawGpu:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        name = _optional(nvml, lambda: _text(nvml.nvmlDeviceGetName(handle)))
        memory = _optional(nvml, lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        rates = _optional(nvml, lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        mig = _optional(nvml, lambda: nvml.nvmlDeviceGetMigMode(handle))
        self._known[index] = (uuid, name or "")
        events, watched = [], False
        if self._xids is not None:
            self._xids.register(uuid, handle)
            events, watched = self._xids.events(uuid), self._xids.watching(uuid)
        return RawGpu(
            index=index,
            uuid=uuid,
            name=name or "",
            memory_total_mib=_mib(getattr(memory, "total", None)),
            memory_used_mib=_mib(getattr(memory, "used", None)),
            utilization_pct=percent(getattr(rates, "gpu", None)),
            mig_mode=_mig_mode(nvml, mig),
            processes=self._processes(nvml, handle),
            mig_devices=self._mig_devices(nvml, handle)
            if _mig_mode(nvml, mig) == "enabled"
            else (),
            health=read_health(nvml, handle, xid_events=events, xids_watched=watched),
        )

    def _mig_devices(self, nvml: Any, handle: Any) -> tuple[RawMig, ...]:
        """The MIG devices of a MIG-enabled GPU; empty slots and unreadable ones are skipped."""
        count = _optional(nvml, lambda: int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))) or 0
        found = []
        for slot in range(count):
            mig = self._read_mig(nvml, handle, slot)
            if mig is not None:
                found.append(mig)
        return tuple(found)

    def _read_mig(self, nvml: Any, parent: Any, slot: int) -> RawMig | None:
        mig = _optional(nvml, lambda: nvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, slot))
        if mig is None:
            return None
        uuid = _optional(nvml, lambda: _text(nvml.nvmlDeviceGetUUID(mig)))
        attributes = _optional(nvml, lambda: nvml.nvmlDeviceGetAttributes(mig))
        if not uuid or attributes is None:
            return None
        memory = _optional(nvml, lambda: nvml.nvmlDeviceGetMemoryInfo(mig))
        return RawMig(
            uuid=uuid,
            profile=mig_profile(attributes),
            gpu_instance=_optional(nvml, lambda: int(nvml.nvmlDeviceGetGpuInstanceId(mig))),
            compute_instance=_optional(nvml, lambda: int(nvml.nvmlDeviceGetComputeInstanceId(mig))),
            memory_total_mib=_mib(getattr(memory, "total", None)),
            memory_used_mib=_mib(getattr(memory, "used", None)),
            processes=self._processes(nvml, mig),
        )

    def _processes(self, nvml: Any, handle: Any) -> tuple[RawProcess, ...]:
        infos: Any = None
        if not self._processes_v2:
            try:
                infos = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            except (nvml.NVMLLibraryMismatchError, nvml.NVMLError_FunctionNotFound):
                # Driver older than the bindings: the unversioned (v3) call is missing.
                self._processes_v2 = True
            except nvml.NVMLError:
                return ()
        if self._processes_v2:
            infos = _optional(nvml, lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v2(handle))
        return tuple(
            RawProcess(int(info.pid), _mib(getattr(info, "usedGpuMemory", None)))
            for info in infos or ()
        )


def _optional(nvml: Any, call: Callable[[], _T]) -> _T | None:
    """The call's value, or None when NVML answers with any error (Not Supported, ...)."""
    try:
        return call()
    except nvml.NVMLError:
        return None


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _mib(value_bytes: int | None) -> int | None:
    return None if value_bytes is None else int(value_bytes) // _MIB


def _mig_mode(nvml: Any, modes: Any) -> MigMode | None:
    if not modes:
        return None
    return "enabled" if modes[0] == nvml.NVML_DEVICE_MIG_ENABLE else "disabled"


def mig_profile(attributes: Any) -> str:
    """The profile name from NVML MIG attributes: `<G>g.<GB>gb`, `<C>c.<G>g.<GB>gb` if C != G.

    The memory part is the device memory rounded up to whole GB, as profile names show it
    (A100-80GB 1g: 9856 MB -> 1g.10gb). Attribute suffixes (+me, +gfx) are not in NVML's
    attributes and are not reported.
    """
    slices = int(getattr(attributes, "gpuInstanceSliceCount", 0) or 0)
    compute = int(getattr(attributes, "computeInstanceSliceCount", 0) or 0) or slices
    memory_mb = int(getattr(attributes, "memorySizeMB", 0) or 0)
    gb = -(-memory_mb // 1024)
    base = f"{slices}g.{gb}gb"
    return base if compute == slices else f"{compute}c.{base}"
