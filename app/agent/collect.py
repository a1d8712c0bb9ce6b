"""One collection cycle: read the GPUs (NVML, else nvidia-smi), attribute, build the report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from app.agent.attribution import ProcessOwner, read_process
from app.agent.readings import RawGpu, RawProcess, RawReadings, ReaderUnavailableError
from app.domain.report import (
    AgentReport,
    DeviceAssignment,
    DraAssignment,
    GpuReading,
    MigDeviceReading,
    ProcessReading,
)

MAX_GPUS = 64
MAX_PROCESSES_PER_GPU = 4096
MAX_MIG_DEVICES = 64
_ERROR_MAX_CHARS = 2048


class GpuReader(Protocol):
    """NVML or nvidia-smi: one pass over the GPUs, or ReaderUnavailableError."""

    def read(self) -> RawReadings: ...


@dataclass(frozen=True, kw_only=True, eq=False)
class Collector:
    """Builds one AgentReport per call from the first reader that works."""

    node: str
    readers: Sequence[GpuReader]
    proc_root: Path
    clock: Callable[[], datetime]
    agent_version: str | None
    assignments: Callable[[], list[DeviceAssignment] | None] = lambda: None
    # Read after `assignments`: both come from the same PodResources List call.
    dra_assignments: Callable[[], list[DraAssignment] | None] = lambda: None

    def collect(self) -> AgentReport:
        """The report for now; source "none" with `error` set when no reader works."""
        collected_at = self.clock()
        reasons: list[ReaderUnavailableError] = []
        for reader in self.readers:
            try:
                readings = reader.read()
            except ReaderUnavailableError as exc:
                reasons.append(exc)
                continue
            except Exception as exc:  # a reader bug must not stop the agent
                reasons.append(ReaderUnavailableError(f"{_name(reader)} failed: {exc!r}"))
                continue
            try:
                return self._report(collected_at, readings)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                reasons.append(
                    ReaderUnavailableError(
                        f"{_name(reader)} readings do not fit the report: {where}: {first['msg']}"
                    )
                )
        return self._none(collected_at, no_reader_message(reasons))

    def _none(self, collected_at: datetime, error: str) -> AgentReport:
        return AgentReport(
            schema=1,  # REPORT_SCHEMA
            node=self.node,
            collected_at=collected_at,
            source="none",
            error=error[:_ERROR_MAX_CHARS],
            assignments=self.assignments(),
            dra_assignments=self.dra_assignments(),
            agent_version=self.agent_version,
        )

    def _report(self, collected_at: datetime, readings: RawReadings) -> AgentReport:
        owners: dict[int, ProcessOwner] = {}
        users: dict[int, str] = {}
        gpus = [self._gpu(raw, owners, users) for raw in readings.gpus[:MAX_GPUS]]
        problems = list(readings.problems)
        if len(readings.gpus) > MAX_GPUS:
            problems.append(f"{len(readings.gpus) - MAX_GPUS} GPUs left out of the report")
        return AgentReport(
            schema=1,  # REPORT_SCHEMA
            node=self.node,
            collected_at=collected_at,
            source=readings.source,
            driver_version=_clip(readings.driver_version, 64),
            error="; ".join(problems)[:_ERROR_MAX_CHARS] or None,
            gpus=gpus,
            assignments=self.assignments(),
            dra_assignments=self.dra_assignments(),
            agent_version=self.agent_version,
        )

    def _gpu(
        self, raw: RawGpu, owners: dict[int, ProcessOwner], users: dict[int, str]
    ) -> GpuReading:
        return GpuReading(
            index=raw.index,
            uuid=raw.uuid,
            name=raw.name[:256],
            memory_total_mib=raw.memory_total_mib,
            memory_used_mib=raw.memory_used_mib,
            utilization_pct=raw.utilization_pct,
            mig_mode=raw.mig_mode,
            processes=self._processes(raw.processes, owners, users),
            mig_devices=[
                MigDeviceReading(
                    uuid=mig.uuid[:128],
                    profile=mig.profile,
                    gpu_instance=mig.gpu_instance,
                    compute_instance=mig.compute_instance,
                    memory_total_mib=mig.memory_total_mib,
                    memory_used_mib=mig.memory_used_mib,
                    processes=self._processes(mig.processes, owners, users),
                )
                for mig in raw.mig_devices[:MAX_MIG_DEVICES]
            ],
            health=raw.health,
        )

    def _processes(
        self,
        raw_processes: tuple[RawProcess, ...],
        owners: dict[int, ProcessOwner],
        users: dict[int, str],
    ) -> list[ProcessReading]:
        processes: list[ProcessReading] = []
        for process in raw_processes[:MAX_PROCESSES_PER_GPU]:
            owner = owners.get(process.pid)
            if owner is None:
                owner = owners[process.pid] = read_process(
                    process.pid, proc_root=self.proc_root, users=users
                )
            processes.append(
                ProcessReading(
                    pid=process.pid,
                    used_memory_mib=process.used_memory_mib,
                    pod_uid=owner.pod_uid,
                    container=owner.container_id,
                    command=_clip(owner.command or process.name, 4096),
                    user=owner.user,
                    visible=owner.visible,
                )
            )
        return processes


def no_reader_message(reasons: Sequence[ReaderUnavailableError]) -> str:
    """One line saying why no reader worked, e.g. for a node without a driver."""
    if not reasons:
        return "no GPU reader configured"
    joined = " and ".join(str(reason) for reason in reasons)
    if all(reason.driver_missing for reason in reasons):
        return f"no NVIDIA driver: {joined}"
    return f"no GPU reader worked: {joined}"


def _clip(text: str | None, limit: int) -> str | None:
    return text[:limit] if text else None


def _name(reader: object) -> str:
    return getattr(reader, "label", type(reader).__name__)
