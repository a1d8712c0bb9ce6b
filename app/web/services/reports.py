"""The newest good agent report per node, as the dashboard keeps it.

Reports of nodes the cluster does not have (yet) are kept in a bounded space: at most
`max_unknown` of them, the oldest dropped first, and each dropped once it is stale. A
flood of made-up node names therefore costs a fixed amount of memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from enum import StrEnum

from app.domain.report import AgentReport, ReceivedReport
from app.web.services.model_memory import share_fields_sets

MAX_UNKNOWN_NODES = 64


class Outcome(StrEnum):
    STORED = "stored"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out-of-order"


class ReportStore:
    """Keeps one report per node; an older or repeated report never replaces a newer one."""

    def __init__(
        self,
        *,
        on_change: Callable[[], None] = lambda: None,
        is_known: Callable[[str], bool] = lambda _node: True,
        max_unknown: int = MAX_UNKNOWN_NODES,
        stale_after_s: float = 90.0,
    ) -> None:
        self._lock = threading.Lock()
        self._reports: dict[str, ReceivedReport] = {}
        # Stored nodes the cluster did not have on arrival, oldest arrival first.
        self._unknown: dict[str, None] = {}
        self._on_change = on_change
        self.is_known = is_known
        self._max_unknown = max_unknown
        self._stale_after = timedelta(seconds=stale_after_s)
        self.generation = 0

    def accept(self, report: AgentReport, *, received_at: datetime) -> Outcome:
        known = self.is_known(report.node)
        received = ReceivedReport(report=report, received_at=received_at)
        share_fields_sets(received)  # about half of a stored report's memory
        with self._lock:
            current = self._reports.get(report.node)
            if current is not None:
                if report.collected_at == current.report.collected_at:
                    return Outcome.DUPLICATE
                if report.collected_at < current.report.collected_at:
                    return Outcome.OUT_OF_ORDER
            self._unknown.pop(report.node, None)
            if not known:
                self._make_room(now=received_at)
                self._unknown[report.node] = None
            self._reports[report.node] = received
            self.generation += 1
        self._on_change()
        return Outcome.STORED

    def _make_room(self, *, now: datetime) -> None:
        """Drop stale unknown-node reports, then the oldest ones, until one more fits."""
        self._drop_stale_unknown(now)
        while self._unknown and len(self._unknown) >= self._max_unknown:
            self._forget(next(iter(self._unknown)))

    def _drop_stale_unknown(self, now: datetime) -> None:
        oldest_kept = now - self._stale_after
        for name in [n for n in self._unknown if self._reports[n].received_at < oldest_kept]:
            self._forget(name)

    def _forget(self, name: str) -> None:
        del self._unknown[name]
        del self._reports[name]

    def forget_unknown(self, *, nodes: Collection[str], now: datetime) -> None:
        """Re-sort stored reports by the cluster's `nodes`; drop stale ones of absent nodes."""
        with self._lock:
            before = len(self._reports)
            absent = [name for name in self._reports if name not in nodes]
            absent.sort(key=lambda name: self._reports[name].received_at)  # stable: by arrival
            self._unknown = dict.fromkeys(absent)
            self._drop_stale_unknown(now)
            while len(self._unknown) > self._max_unknown:
                self._forget(next(iter(self._unknown)))
            if len(self._reports) != before:
                self.generation += 1

    @property
    def unknown_nodes(self) -> int:
        with self._lock:
            return len(self._unknown)

    def __len__(self) -> int:
        """How many nodes have a stored report."""
        with self._lock:
            return len(self._reports)

    def latest(self) -> dict[str, ReceivedReport]:
        with self._lock:
            return dict(self._reports)
