"""The newest good agent report per node, as the dashboard keeps it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum

from app.domain.report import AgentReport, ReceivedReport


class Outcome(StrEnum):
    STORED = "stored"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out-of-order"


class ReportStore:
    """Keeps one report per node; an older or repeated report never replaces a newer one."""

    def __init__(self, *, on_change: Callable[[], None] = lambda: None) -> None:
        self._lock = threading.Lock()
        self._reports: dict[str, ReceivedReport] = {}
        self._on_change = on_change
        self.generation = 0

    def accept(self, report: AgentReport, *, received_at: datetime) -> Outcome:
        with self._lock:
            current = self._reports.get(report.node)
            if current is not None:
                if report.collected_at == current.report.collected_at:
                    return Outcome.DUPLICATE
                if report.collected_at < current.report.collected_at:
                    return Outcome.OUT_OF_ORDER
            self._reports[report.node] = ReceivedReport(report=report, received_at=received_at)
            self.generation += 1
        self._on_change()
        return Outcome.STORED

    def latest(self) -> dict[str, ReceivedReport]:
        with self._lock:
            return dict(self._reports)
