"""Samples the published snapshot into the history every `interval_s` (one thread).

It reads what the snapshot service publishes (never the cluster a second time): the
current snapshot and the cached pod manifests (owners), and takes again only the nodes
whose state or pods' manifests changed since the previous sample (the store then writes only
the spans whose key changed). Each sample stands for the interval
after it: the interval, or longer where a sample costs more than `MAX_CORE_SHARE` of the
sampler's thread (a big cluster is sampled less often rather than slowing the dashboard;
the spans still tile time, and Prometheus integrates over its own scrapes). A store that
cannot be written (a full disk, a read-only file) leaves the
sample out and says why (`error`); the dashboard's present-time pages never wait on it.
Where another process writes the file (`writer`: two replicas on one volume, a restart
overlapping the old pod), the samples feed /metrics only, and the first sample after that
process ended takes over writing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from app.domain.cluster import Manifest
from app.domain.history.sample import Sample, Sampler
from app.domain.snapshot import Snapshot
from app.errors import HistoryUnavailableError
from app.web.services.background import BackgroundLoop
from app.web.services.history.store import HistoryStore

log = logging.getLogger(__name__)

MAX_CORE_SHARE = 0.05  # a sample's CPU time is at most this share of the time it stands for


class HistorySampler:
    """Turns the current snapshot into a sample each interval; keeps the latest for /metrics."""

    def __init__(
        self,
        store: HistoryStore | None,
        *,
        current: Callable[[], Snapshot | None],
        pods: Callable[[], Sequence[Manifest]],
        clock: Callable[[], datetime],
        interval_s: float,
        retention_days: int,
    ) -> None:
        self.store = store  # None: its file could not be opened (only /metrics is fed)
        self._current, self._pods, self._clock = current, pods, clock
        self.interval_s = interval_s
        self._retention_days = retention_days
        self.latest: Sample | None = None
        self._sampler = Sampler()  # takes again only the nodes that changed since the last
        self.span_s = interval_s  # what the latest sample stands for (the wait to the next)
        self._taken_at_s = 0.0  # time.monotonic() at the latest sample's moment
        self._write_s = 0.0  # the CPU time the latest write took
        self.error: HistoryUnavailableError | None = None  # why the latest write failed
        self.writer: str | None = None  # the process that writes the file, if not this one
        self._loop = BackgroundLoop("history", self._run)

    def sample_now(self) -> Sample | None:
        """Sample the current snapshot at the clock's moment (None before the first one)."""
        snapshot = self._current()
        if snapshot is None:
            return None
        at, self._taken_at_s = self._clock(), time.monotonic()  # where its span starts
        started_s = time.thread_time()
        sample = self._sampler.sample(snapshot, self._pods(), at=at)
        cost_s = time.thread_time() - started_s + self._write_s
        self.span_s = max(self.interval_s, cost_s / MAX_CORE_SHARE)
        self.latest = sample
        if self.store is not None:
            try:
                started_s = time.thread_time()
                kept = self.store.add(
                    sample, span_s=self.span_s, retention_days=self._retention_days
                )
                self._write_s = time.thread_time() - started_s
                writer = None if kept else self.store.writer_elsewhere()
                if writer is not None and self.writer is None:
                    log.info("history file %s written by %s: read only", self.store.path, writer)
                elif writer is None and self.writer is not None:
                    log.info("history file %s: its writer ended, written here", self.store.path)
                self.writer, self.error = writer, None
            except HistoryUnavailableError as exc:
                if self.error is None or self.error.code != exc.code:
                    log.warning("history sample not kept: %s", exc)
                self.error = exc
        return sample

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _run(self) -> None:
        due = time.monotonic()
        while True:
            try:
                self.sample_now()
            except Exception:  # one bad snapshot never stops the history
                log.exception("history sample failed")
            # paced by deadlines: samples tile time, never drift; a sample that started late
            # (the one before it ran past its span's end) is followed where its span ends,
            # never inside it
            due = max(due, self._taken_at_s) + self.span_s
            if self._loop.stopping.wait(max(0.0, due - time.monotonic())):
                return
