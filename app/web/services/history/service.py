"""The GPU-hour history as the routes ask for it: showback, charts, who held a GPU when.

One reader answers: Prometheus when GEO_MLOPS_PROMETHEUS_URL is set, else the SQLite file
at GEO_MLOPS_HISTORY_PATH (in memory when unset). What cannot be answered is a
HistoryUnavailableError with a code the web layer words.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from app.domain.history.records import HeldBucket, PastGpu, PastHold
from app.domain.history.sample import Sample
from app.domain.history.showback import HeldSeconds, Showback, ShowbackBy, showback
from app.domain.snapshot import Snapshot
from app.errors import HistoryUnavailableError
from app.settings import Settings
from app.web.services.history.prometheus import PrometheusHistory
from app.web.services.history.sampler import HistorySampler
from app.web.services.history.store import HistoryStore
from app.web.services.snapshots.builder import ClusterSource
from app.web.views.metrics_history import render_history

log = logging.getLogger(__name__)

Period = Literal["24h", "7d", "30d"]
PERIODS: dict[str, tuple[timedelta, timedelta]] = {  # the window and its chart's bucket
    "24h": (timedelta(hours=24), timedelta(hours=1)),
    "7d": (timedelta(days=7), timedelta(hours=6)),
    "30d": (timedelta(days=30), timedelta(days=1)),
}


class HistoryReader(Protocol):
    def held(
        self, start_s: float, end_s: float, *, by: ShowbackBy
    ) -> tuple[list[HeldSeconds], float]: ...

    def buckets(self, start_s: float, end_s: float, *, step_s: float) -> list[HeldBucket]: ...

    def holds_at(self, node: str, at_s: float) -> tuple[list[PastHold], list[PastGpu]]: ...

    def holds_between(self, node: str, start_s: float, end_s: float) -> list[PastHold]: ...


@dataclass(frozen=True)
class GpuHolders:
    gpu: PastGpu
    holds: tuple[PastHold, ...]


@dataclass(frozen=True)
class NodeTimeline:
    """Per GPU of a node (index, UUID), the spans of the pods that held it."""

    node: str
    start: datetime
    end: datetime
    lanes: tuple[tuple[int, str, tuple[PastHold, ...]], ...]


@dataclass(frozen=True)
class HistoryChart:
    """A period's held GPU-hours per step (the chart's columns) and its showback table."""

    start: datetime
    end: datetime
    step: timedelta
    buckets: tuple[HeldBucket, ...]
    showback: Showback


@dataclass(kw_only=True, eq=False)
class HistoryService:
    """Answers history questions from its reader; the sampler feeds the file and /metrics."""

    sampler: HistorySampler
    reader: HistoryReader | None  # None: the file could not be opened (startup_error says why)
    engine: Literal["sqlite", "prometheus"]
    retention_days: int
    clock: Callable[[], datetime]
    startup_error: HistoryUnavailableError | None = None
    # the latest sample's /metrics text, with the sample and `writing` it was rendered for
    _rendered: tuple[Sample | None, bool | None, str] | None = field(default=None, init=False)

    def metrics_text(self) -> str:
        """The latest sample's families for /metrics (empty before one), rendered once each."""
        sample, writing = self.sampler.latest, self.writing()
        rendered = self._rendered
        if rendered is None or rendered[0] is not sample or rendered[1] is not writing:
            rendered = (sample, writing, render_history(sample, writing=writing))
            self._rendered = rendered
        return rendered[2]

    def writing(self) -> bool | None:
        """Whether this process writes the history file (None: no file open, or no sample
        yet): one process writes a file, any other only reads it."""
        if self.sampler.store is None or self.sampler.latest is None:
            return None
        return self.sampler.writer is None

    def writer_elsewhere(self) -> str | None:
        """The process that writes the history file where this one only reads it."""
        return self.sampler.writer

    def now(self) -> datetime:
        return self.clock()

    def problem(self) -> HistoryUnavailableError | None:
        """Why the history is unavailable or incomplete now (None: it is fine)."""
        if self.startup_error is not None:
            return self.startup_error
        return self.sampler.error

    def showback(self, start: datetime, end: datetime, by: ShowbackBy) -> Showback:
        held, physical_s = self._read().held(start.timestamp(), end.timestamp(), by=by)
        return showback(held, by, physical_gpu_s=physical_s)

    def chart(self, period: str, by: ShowbackBy) -> HistoryChart:
        length, step = PERIODS[period]
        end = self.clock()
        start = end - length
        reader = self._read()
        buckets = reader.buckets(start.timestamp(), end.timestamp(), step_s=step.total_seconds())
        held, physical_s = reader.held(start.timestamp(), end.timestamp(), by=by)
        return HistoryChart(
            start, end, step, tuple(buckets), showback(held, by, physical_gpu_s=physical_s)
        )

    def holders(self, node: str, at: datetime) -> list[GpuHolders]:
        holds, gpus = self._read().holds_at(node, at.timestamp())
        known = {gpu.uuid for gpu in gpus}
        # a GPU seen only through its holders (Prometheus keeps both; a file too): listed
        extra = [
            PastGpu(hold.gpu_uuid, hold.gpu_index, hold.mode, hold.replicas, hold.config)
            for hold in holds
            if hold.gpu_uuid not in known
        ]
        listed = {gpu.uuid: gpu for gpu in [*gpus, *extra]}
        return [
            GpuHolders(gpu, tuple(hold for hold in holds if hold.gpu_uuid == uuid))
            for uuid, gpu in sorted(listed.items(), key=lambda item: (item[1].index, item[0]))
        ]

    def timeline(self, node: str, *, hours: int = 24) -> NodeTimeline:
        """Who held each GPU of `node` over the last `hours`, span by span."""
        end = self.clock()
        start = end - timedelta(hours=hours)
        reader = self._read()
        spans = reader.holds_between(node, start.timestamp(), end.timestamp())
        _, gpus_now = reader.holds_at(node, end.timestamp() - 1)
        lanes = {(gpu.index, gpu.uuid) for gpu in gpus_now}
        lanes |= {(hold.gpu_index, hold.gpu_uuid) for hold in spans}
        return NodeTimeline(
            node,
            start,
            end,
            tuple(
                (index, uuid, tuple(h for h in spans if h.gpu_uuid == uuid))
                for index, uuid in sorted(lanes)
            ),
        )

    def _read(self) -> HistoryReader:
        if self.reader is None:  # the file could not be opened: say why
            raise self.startup_error or HistoryUnavailableError("history.unreadable", "")
        return self.reader


def build_history(
    settings: Settings,
    current: Callable[[], Snapshot | None],
    source: ClusterSource,
    *,
    clock: Callable[[], datetime],
) -> HistoryService:
    """The history the settings ask for: the file at GEO_MLOPS_HISTORY_PATH (in memory when
    unset: since the process started), answered from Prometheus when its URL is set."""
    store: HistoryStore | None = None
    error: HistoryUnavailableError | None = None
    try:
        store = HistoryStore(settings.history_path)
    except HistoryUnavailableError as exc:
        log.warning("history file %s unusable: %s", settings.history_path, exc)
        error = exc
    if store is not None and store.set_aside is not None:
        log.warning("history file unreadable: set aside as %s", store.set_aside)
    reader: HistoryReader | None = store
    engine: Literal["sqlite", "prometheus"] = "sqlite"
    if settings.prometheus_url:
        reader = PrometheusHistory(
            settings.prometheus_url,
            interval_s=settings.history_interval_s,
            timeout_s=settings.prometheus_timeout_s,
        )
        engine, error = "prometheus", None
    return HistoryService(
        sampler=HistorySampler(
            store,
            current=current,
            pods=lambda: source.items("pods"),
            clock=clock,
            interval_s=settings.history_interval_s,
            retention_days=settings.history_retention_days,
        ),
        reader=reader,
        engine=engine,
        retention_days=settings.history_retention_days,
        clock=clock,
        startup_error=error,
    )
