"""XID errors through an NVML event set: registered once per GPU, drained on every pass.

XIDs are events, not state: NVML hands each one out once. The watcher keeps the latest
ones per GPU UUID (at most 64) with the time it received them, so every report carries
what happened since the agent started; a GPU that raised XID 79 has fallen off the bus.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from app.domain.health import XidEvent

MAX_EVENTS = 64
_MAX_DRAINED = 1024  # per pass: a storm of events never holds the pass up


class XidWatcher:
    """One NVML event set for the XID critical errors of every GPU the reader saw."""

    def __init__(self, nvml: Any, *, now: Callable[[], datetime]) -> None:
        self._nvml = nvml
        self._now = now
        self._set: Any = None
        self._registered: set[str] = set()
        self._watched: set[str] = set()
        self._events: dict[str, list[XidEvent]] = {}
        self.unsupported = False

    def register(self, uuid: str, handle: Any) -> None:
        """Ask NVML for the GPU's XID errors, once; a GPU that cannot is skipped."""
        nvml = self._nvml
        if uuid in self._registered or self.unsupported:
            return
        try:
            if self._set is None:
                self._set = nvml.nvmlEventSetCreate()
            nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, self._set)
        except nvml.NVMLError_NotSupported:
            self._registered.add(uuid)  # this GPU cannot report XIDs; the others may
            return
        except nvml.NVMLError:
            self.unsupported = self._set is None
            return
        self._registered.add(uuid)
        self._watched.add(uuid)

    def watching(self, uuid: str) -> bool:
        """Whether the GPU's XID errors reach this watcher."""
        return uuid in self._watched

    def drain(self) -> None:
        """Take every waiting event off the set without waiting (timeout 0)."""
        nvml = self._nvml
        if self._set is None:
            return
        for _ in range(_MAX_DRAINED):
            try:
                data = nvml.nvmlEventSetWait_v2(self._set, 0)
            except nvml.NVMLError_Timeout:
                return
            except nvml.NVMLError:
                return
            self._record(data)

    def _record(self, data: Any) -> None:
        nvml = self._nvml
        try:
            uuid = nvml.nvmlDeviceGetUUID(data.device)
        except nvml.NVMLError:
            return
        uuid = uuid.decode(errors="replace") if isinstance(uuid, bytes) else str(uuid)
        events = self._events.setdefault(uuid, [])
        events.append(XidEvent(xid=int(data.eventData) & 0xFFFF, at=self._now()))
        del events[:-MAX_EVENTS]

    def events(self, uuid: str) -> list[XidEvent]:
        return list(self._events.get(uuid, ()))

    def close(self) -> None:
        nvml = self._nvml
        if self._set is not None:
            with contextlib.suppress(nvml.NVMLError):
                nvml.nvmlEventSetFree(self._set)
        self._set = None
        self._registered.clear()
        self._watched.clear()
