"""When to collect and when to (re)send: the agent's single-threaded schedule.

Reports wait in a queue of one: a newer report replaces an unsent older one, because
the dashboard only cares about the latest state. Failed sends back off exponentially
(with jitter, capped); the back-off belongs to the connection, so a fresh report does
not restart the hammering. Clock, wait and randomness are injected for tests.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from app.agent.logs import fields
from app.agent.sender import Outcome, backoff_delay_s
from app.domain.report import AgentReport


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Back-off bounds, and how many attempts `--once` makes before giving up."""

    base_s: float = 1.0
    cap_s: float = 60.0
    once_attempts: int = 5


class LatestOnly:
    """A bounded queue of one report: putting a newer one drops the unsent older one."""

    def __init__(self) -> None:
        self._report: AgentReport | None = None

    def put(self, report: AgentReport) -> AgentReport | None:
        """Queue `report`; returns the older report it replaced, if any."""
        replaced, self._report = self._report, report
        return replaced

    def peek(self) -> AgentReport | None:
        return self._report

    def clear(self) -> None:
        self._report = None


@dataclass(kw_only=True, eq=False)
class AgentLoop:
    """Collects every `interval_s` and delivers the newest report with back-off."""

    collect: Callable[[], AgentReport]
    post: Callable[[AgentReport], Outcome]
    interval_s: float
    clock: Callable[[], float]
    wait: Callable[[float], bool]
    log: logging.Logger
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    rng: random.Random = field(default_factory=random.Random)
    queue: LatestOnly = field(default_factory=LatestOnly, init=False)
    _failures: int = field(default=0, init=False)
    _delivered_any: bool = field(default=False, init=False)
    _reader_error: str | None = field(default=None, init=False)

    def run_once(self) -> bool:
        """Collect, then send with retries; True when the dashboard accepted the report."""
        report = self.collect()
        if report.source == "none":
            self.log.error(report.error or "no GPU reader worked")
            return False
        for attempt in range(1, self.policy.once_attempts + 1):
            outcome = self.post(report)
            if outcome.delivered:
                self.log.info("report delivered", extra=_summary(report, outcome))
                return True
            if not outcome.retry:
                self.log.error(outcome.detail, extra=fields(status=outcome.status))
                return False
            if attempt == self.policy.once_attempts:
                break
            delay_s = self._delay_s(attempt, outcome)
            self.log.warning(
                "report not delivered, retrying",
                extra=fields(
                    detail=outcome.detail,
                    status=outcome.status,
                    attempt=attempt,
                    retry_in_s=round(delay_s, 2),
                ),
            )
            if self.wait(delay_s):
                return False
        self.log.error(
            "report not delivered, giving up",
            extra=fields(
                detail=outcome.detail, status=outcome.status, attempts=self.policy.once_attempts
            ),
        )
        return False

    def run(self) -> None:
        """Loop until `wait` reports a stop request (SIGTERM/SIGINT)."""
        next_collect_at = self.clock()
        next_send_at = next_collect_at
        while True:
            now = self.clock()
            if now >= next_collect_at:
                self._enqueue(self.collect())
                next_collect_at += self.interval_s
                if next_collect_at <= now:  # fell behind (slow send): do not burst
                    next_collect_at = now + self.interval_s
            pending = self.queue.peek()
            if pending is not None and now >= next_send_at:
                next_send_at = self._send(pending)
                continue
            wake_at = next_collect_at if pending is None else min(next_collect_at, next_send_at)
            if self.wait(max(0.0, wake_at - self.clock())):
                return

    def _enqueue(self, report: AgentReport) -> None:
        if report.source == "none" and report.error != self._reader_error:
            self.log.error(report.error or "no GPU reader worked")
        elif report.source != "none" and self._reader_error is not None:
            self.log.info("GPU readings available again", extra=fields(source=report.source))
        self._reader_error = report.error if report.source == "none" else None
        if self.queue.put(report) is not None:
            self.log.info("unsent report replaced by a newer one")

    def _send(self, report: AgentReport) -> float:
        """One attempt; returns when the next attempt may start."""
        outcome = self.post(report)
        if outcome.delivered:
            self.queue.clear()
            if not self._delivered_any or self._failures:
                self.log.info("report delivered", extra=_summary(report, outcome))
            else:
                self.log.debug("report delivered", extra=_summary(report, outcome))
            self._delivered_any = True
            self._failures = 0
            return self.clock()
        if not outcome.retry:
            self.queue.clear()
            self.log.error(outcome.detail, extra=fields(status=outcome.status))
            return self.clock()
        self._failures += 1
        delay_s = self._delay_s(self._failures, outcome)
        self.log.warning(
            "report not delivered, will retry",
            extra=fields(
                detail=outcome.detail,
                status=outcome.status,
                failures=self._failures,
                retry_in_s=round(delay_s, 2),
            ),
        )
        return self.clock() + delay_s

    def _delay_s(self, failures: int, outcome: Outcome) -> float:
        if outcome.retry_after_s is not None:
            floor_s = self.policy.base_s / 2
            return max(floor_s, min(outcome.retry_after_s, self.policy.cap_s))
        return backoff_delay_s(
            failures, base_s=self.policy.base_s, cap_s=self.policy.cap_s, rng=self.rng
        )


def _summary(report: AgentReport, outcome: Outcome) -> dict[str, object]:
    processes = sum(len(gpu.processes) for gpu in report.gpus)
    return fields(
        status=outcome.status,
        detail=outcome.detail,
        source=report.source,
        gpus=len(report.gpus),
        processes=processes,
    )
