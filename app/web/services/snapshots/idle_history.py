"""The idle history: slots idle or barely used for many minutes, and the findings it tells."""

from __future__ import annotations

from datetime import datetime

from app.domain.findings.usage import history_findings, with_findings
from app.domain.snapshot import Finding, IdleSlots, Snapshot
from app.domain.usage.idle import UsageHistory, idle_slots

HISTORY_EVERY_S = 1.0  # idle-slot findings are reckoned at most this often


class IdleHistory:
    """Observes every snapshot built; adds the findings only the history can tell."""

    def __init__(self, *, idle_after_s: float, low_after_s: float) -> None:
        self.usage = UsageHistory()  # idle slots and utilization, last hour
        self._idle_after_s, self._low_after_s = idle_after_s, low_after_s
        self._findings: list[Finding] = []  # the idle-history findings of ...
        self._idle: list[IdleSlots] = []  # ... and its idle holders (what usage reads) of ...
        self._findings_at: datetime | None = None  # ... this moment

    def with_history(self, snapshot: Snapshot, *, now: datetime) -> Snapshot:
        """The snapshot plus what only the idle history can tell: its findings, and the idle
        holders as a typed part (`idle_slots`, what usage reads).

        They are about slots idle for many minutes, so they are reckoned at most once per
        `HISTORY_EVERY_S` (every holder of every GPU is looked at): a build in between
        adds the latest ones again.
        """
        self.usage.observe(snapshot, now=now)
        last = self._findings_at
        if last is None or not 0 <= (now - last).total_seconds() < HISTORY_EVERY_S:
            idle = self.usage.idle_holders(now=now, after_s=self._idle_after_s)
            low = self.usage.low_gpus(now=now, after_s=self._low_after_s)
            self._findings, self._idle = history_findings(idle, low), idle_slots(idle)
            self._findings_at = now
        with_idle = snapshot.model_copy(update={"idle_slots": self._idle})
        return with_findings(with_idle, self._findings)
