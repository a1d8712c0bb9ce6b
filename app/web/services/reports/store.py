"""The newest good agent report per node, as the dashboard keeps it.

Reports of nodes the cluster does not have (yet) are kept in a bounded space: at most
`max_unknown` of them, the oldest dropped first, and each dropped once it is stale. A
flood of made-up node names therefore costs a fixed amount of memory. Which nodes exist is
read from the NodeRoster the snapshot builder publishes; the store never calls the
snapshot side.

An agent whose readings did not change since its last report (the usual case: the same
GPUs, the same processes) costs almost nothing: the new report is stored with the stored
report's reading objects, so the engine sees the very same readings and only renews the
node's agent times (app.domain.engine.memo.same_readings) instead of recomputing the node.
The store also remembers how each node's newest report was posted (a digest of its bytes
but the time, app.web.services.reports.digest), so the intake knows such a body unread.
Such a report asks for no build; `next_stale_at` tells the snapshot loop when a stored
agent will turn stale, the one moment a renewal's absence shows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum

from app.domain.accounting.facts import fresh_from, next_stale_at
from app.domain.report import AgentReport, ReceivedReport
from app.web.services.reports.model_memory import share_fields_sets
from app.web.services.reports.node_roster import NodeRoster

MAX_UNKNOWN_NODES = 64


class Outcome(StrEnum):
    STORED = "stored"
    RENEWED = "renewed"  # stored; the same readings as the node's previous report
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out-of-order"


class ReportStore:
    """Keeps one report per node; an older or repeated report never replaces a newer one."""

    def __init__(
        self,
        *,
        on_change: Callable[[], None] = lambda: None,
        roster: NodeRoster | None = None,
        max_unknown: int = MAX_UNKNOWN_NODES,
        stale_after_s: float = 90.0,
    ) -> None:
        self._lock = threading.Lock()
        self._reports: dict[str, ReceivedReport] = {}
        # Stored nodes the cluster did not have on arrival, oldest arrival first.
        self._unknown: dict[str, None] = {}
        self._on_change = on_change
        self._roster = roster or NodeRoster()
        # the digest of each node's newest report as posted (app.web.services.reports.digest)
        self._node_by_digest: dict[bytes, str] = {}
        self._digest_of: dict[str, bytes] = {}
        self._roster_seen = self._roster.version
        self._max_unknown = max_unknown
        self._stale_after = timedelta(seconds=stale_after_s)
        # What builds that keep the agents' ages read (see for_build): each node's report as
        # of the latest reckoning, or a newer one with new readings or of a stale agent
        self._shown: dict[str, ReceivedReport] = {}
        self._shown_fresh_from: datetime | None = None  # received before: a stale agent's
        self.generation = 0

    def posted_as(self, digest: bytes) -> ReceivedReport | None:
        """The newest report of the node whose newest report was posted as `digest`."""
        with self._lock:
            node = self._node_by_digest.get(digest)
            return self._reports.get(node) if node is not None else None

    def accept(
        self, report: AgentReport, *, received_at: datetime, digest: bytes | None = None
    ) -> Outcome:
        """Store `report` if it is the node's newest; `digest`: how it was posted."""
        known = self._roster.has(report.node)
        stored = self._reports.get(report.node)
        if stored is not None and report.collected_at > stored.report.collected_at:
            report = with_readings_of(stored.report, report)
        received = ReceivedReport(report=report, received_at=received_at)
        if stored is not None and report.gpus is stored.report.gpus:
            _share_like(received, stored)  # its parts are the stored report's, sets shared
        else:
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
            self._remember(report.node, digest)
            renewed = current is not None and report.gpus is current.report.gpus
            shown = self._shown.get(report.node)
            stale_before = self._shown_fresh_from
            if not renewed or shown is None or (stale_before and shown.received_at < stale_before):
                self._shown[report.node] = received
            self.generation += 1
        self._on_change()
        return Outcome.RENEWED if renewed else Outcome.STORED

    def _make_room(self, *, now: datetime) -> None:
        """Drop stale unknown-node reports, then the oldest ones, until one more fits."""
        self._drop_stale_unknown(now)
        while self._unknown and len(self._unknown) >= self._max_unknown:
            self._forget(next(iter(self._unknown)))

    def _drop_stale_unknown(self, now: datetime) -> None:
        oldest_kept = now - self._stale_after
        for name in [n for n in self._unknown if self._reports[n].received_at < oldest_kept]:
            self._forget(name)

    def _remember(self, node: str, digest: bytes | None) -> None:
        old = self._digest_of.pop(node, None)
        if old is not None:
            self._node_by_digest.pop(old, None)
        if digest is not None:
            self._digest_of[node] = digest
            self._node_by_digest[digest] = node

    def _forget(self, name: str) -> None:
        del self._unknown[name]
        del self._reports[name]
        self._shown.pop(name, None)
        self._remember(name, None)

    def _sort_out(self, now: datetime) -> None:
        """Re-sort stored reports by the roster's nodes; drop stale ones of absent nodes."""
        nodes = self._roster.names()
        if nodes is None:
            return
        with self._lock:
            before = len(self._reports)
            if self._roster_seen == self._roster.version:  # the same nodes: only time passed
                self._drop_stale_unknown(now)
                self.generation += len(self._reports) != before
                return
            self._roster_seen = self._roster.version
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

    def next_stale_at(self, *, now: datetime) -> datetime | None:
        """The earliest moment after `now` at which a stored report's agent turns stale (the
        engine's rule, `stale_after_s` being the engine's limit); None when none will."""
        with self._lock:
            received = list(self._reports.values())
        return next_stale_at(received, now=now, stale_after_s=self._stale_after.total_seconds())

    def latest(self, *, now: datetime | None = None) -> dict[str, ReceivedReport]:
        """Every stored report; given `now`, first sorted out by the roster's nodes."""
        if now is not None:
            self._sort_out(now)
        with self._lock:
            return dict(self._reports)

    def for_build(self, *, now: datetime, reckon_at: datetime | None) -> dict[str, ReceivedReport]:
        """The reports a build at `now` reads, sorted out by the roster's nodes first.

        A build that reckons agents' ages (`reckon_at`) reads every stored report. One that
        keeps the ages of the latest reckoning (None) reads the reports of that reckoning
        for agents that only renewed since (the same readings, newer times): what such a
        report changes is the agent's age and `collected_at`, which the next reckoning takes
        in, within `refresh_interval_s`; a build for a change then costs the change, not
        every renewal since (at 10,000 nodes, 667 a second). Reports with new readings, a
        node's first report and a stale agent's renewal are read at once.
        """
        self._sort_out(now)
        with self._lock:
            if reckon_at is None:
                return dict(self._shown)
            self._shown = dict(self._reports)
            self._shown_fresh_from = fresh_from(reckon_at, self._stale_after.total_seconds())
            return dict(self._reports)


def _share_like(received: ReceivedReport, stored: ReceivedReport) -> None:
    """`received` and its report given `stored`'s (shared) field-name sets, when equal."""
    for mine, theirs in ((received, stored), (received.report, stored.report)):
        names = theirs.__pydantic_fields_set__
        if mine.__pydantic_fields_set__ == names:
            object.__setattr__(mine, "__pydantic_fields_set__", names)


def with_readings_of(stored: AgentReport, report: AgentReport) -> AgentReport:
    """`report` holding `stored`'s reading objects when they are equal (only times differ)."""
    if (report.source, report.driver_version, report.error, report.agent_version) != (
        stored.source,
        stored.driver_version,
        stored.error,
        stored.agent_version,
    ):
        return report
    if (
        report.gpus is stored.gpus
        and report.assignments is stored.assignments
        and report.dra_assignments is stored.dra_assignments
    ):
        return report  # already (app.web.services.reports.intake: a body known but for its time)
    if (
        report.gpus != stored.gpus
        or report.assignments != stored.assignments
        or report.dra_assignments != stored.dra_assignments
    ):
        return report
    return report.model_copy(
        update={
            "gpus": stored.gpus,
            "assignments": stored.assignments,
            "dra_assignments": stored.dra_assignments,
        }
    )
