"""The build loop: the current snapshot, recomputed off the request path on every change.

Requests only read `current()`. One background thread builds (app.web.services.snapshots.builder)
at once for a change of the cluster or a node's first report; after a pause for a stream of
reports with new readings (`STREAM_REPORTS`, at most `MAX_HOLD_S`); every
`refresh_interval_s`, reckoning the agents' ages; and at the moment an agent turns stale
(`ReportStore.next_stale_at`). A report that only renews an agent asks for no build, and a
build between two reckonings keeps the ages of the latest one. Builds run outside the
cyclic garbage collector (app.gc_policy.outside_collections).

Rendered forms of a snapshot (JSON bodies, metrics text, page fragments) are memoised per
snapshot in one typed cache per kind (app.web.services.snapshots.render_cache). The keys
requested in the last `HOT_KEY_S` are rendered ahead in this thread after each build,
cheapest first, until a cluster change comes in; renderings slower than `SLOW_RENDER_S` are
redone by a second thread only once asked for again. Values worked out from a snapshot and
the cache beside it (the plugin's rollout status) are refreshed first, the same way
(app.web.services.snapshots.derived). Why, with the figures:
docs/PERFORMANCE.md, "How the build loop keeps up".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from markupsafe import Markup

from app.domain.accounting.free_gpus import FreeByModel, FreeMemo, free_by_model
from app.domain.cluster import AccountingOptions
from app.domain.snapshot import Snapshot
from app.domain.usage.idle import UsageHistory
from app.gc_policy import outside_collections
from app.web.services.reports.node_roster import NodeRoster
from app.web.services.reports.store import ReportStore
from app.web.services.snapshots.builder import Clock, ClusterSource, SnapshotBuilder
from app.web.services.snapshots.derived import Derived
from app.web.services.snapshots.idle_history import IdleHistory
from app.web.services.snapshots.render_cache import RenderCache

log = logging.getLogger(__name__)
K = TypeVar("K")
T = TypeVar("T")

# Report-driven builds wait at most this long after a build: a pause as long as a slow
# build would take in more reports, so the next build would be slower still (at 5,000
# nodes and 333 reports/s, builds and delays grew without bound).
MAX_HOLD_S = 0.15
STEP_S = 0.01  # how often a waiting snapshot thread looks at what it is not woken by
# Reports with new readings arriving during one build that make a stream (held back, then
# built in one batch): fewer are built at once (one after another, each waiting to be seen)
STREAM_REPORTS = 2


@dataclass(frozen=True)
class Readiness:
    ready: bool
    degraded: bool
    reason: str


class SnapshotService:
    """Owns the background threads that turn cache + reports into the current snapshot."""

    def __init__(
        self,
        source: ClusterSource,
        reports: ReportStore,
        *,
        options: AccountingOptions,
        clock: Clock,
        roster: NodeRoster,
        min_interval_s: float = 0.1,
        refresh_interval_s: float = 5.0,
        idle_after_s: float = 900.0,
        low_after_s: float = 1800.0,
    ) -> None:
        self._source = source
        self._reports = reports
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._refresh_interval_s = refresh_interval_s
        self._idle = IdleHistory(idle_after_s=idle_after_s, low_after_s=low_after_s)
        self._builder = SnapshotBuilder(reports, options=options, roster=roster)
        self._current: Snapshot | None = None
        self.last_error: str | None = None  # why the latest build failed; None after a good one
        self._good: Snapshot | None = None  # the latest snapshot a build produced
        self._failed_since: datetime | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pokes = 0  # asks for a build so far (reports with new readings, admin changes)
        self._pokes_seen = 0  # ... when the latest build started
        self._slow_wake = threading.Event()
        self._built_at: datetime | None = None  # the clock's time the latest build read
        self._ages_at: datetime | None = None  # when the latest build reckoned agents' ages
        # the first moment after `_ages_at` an agent fresh then turns stale, as found at some
        # moment since: reports received later only put it off (see _ages_hold)
        self._stale_at: tuple[datetime | None, datetime | None] = (None, None)
        self._threads: list[threading.Thread] = []
        self.builds = 0
        self._free_lock = threading.Lock()
        self._free: tuple[Snapshot | None, list[FreeByModel]] = (None, [])
        self._free_memo = FreeMemo()
        runs, wake = self._rendering_slow, self._slow_wake.set
        self.json_bodies: RenderCache[bytes] = RenderCache(slow_thread_runs=runs, wake_slow=wake)
        self.metrics_text: RenderCache[str] = RenderCache(slow_thread_runs=runs, wake_slow=wake)
        self.page_html: RenderCache[Markup] = RenderCache(slow_thread_runs=runs, wake_slow=wake)
        self._derived: dict[str, Derived[Any, Any]] = {}
        self._derived_lock = threading.Lock()

    @property
    def usage(self) -> UsageHistory:
        """Idle slots and utilization, last hour (observes every build)."""
        return self._idle.usage

    def _caches(self) -> tuple[RenderCache[bytes], RenderCache[str], RenderCache[Markup]]:
        return self.json_bodies, self.metrics_text, self.page_html

    def start(self) -> None:
        """Start the background threads (again after a stop: an app's lifespan may repeat)."""
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._run, name="snapshots", daemon=True),
            threading.Thread(target=self._render_slow, name="snapshot-renders", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._slow_wake.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def poke(self) -> None:
        """Ask for a recompute now (a report with new readings arrived)."""
        self._pokes += 1
        self._wake.set()

    def current(self) -> Snapshot | None:
        return self._current

    def derived(self, name: str, make: Callable[[], Derived[K, T]]) -> Derived[K, T]:
        """The value `name` worked out per published snapshot, held by this service (one
        per running dashboard), made by `make` on the first ask."""
        with self._derived_lock:
            found = self._derived.get(name)
            if found is None:
                found = self._derived[name] = make()
            return found

    def free_gpus(self, snapshot: Snapshot) -> list[FreeByModel]:
        """Free GPUs per model of `snapshot` (the summary and the overview show them),
        worked out once per snapshot, and per node only where its state changed."""
        with self._free_lock:
            of, found = self._free
            if of is not snapshot:
                found = free_by_model(snapshot.nodes, memo=self._free_memo)
                self._free = (snapshot, found)
            return found

    @property
    def stale_reason(self) -> str | None:
        """Why the served snapshot is stale (a failed build, an unreachable API server)."""
        if self.last_error is not None:
            return f"snapshot build failed: {self.last_error}"
        health = self._source.health()
        if health.failing_since is not None and health.refused:
            return f"the API server refuses a read (RBAC): {health.last_error}"
        if health.failing_since is not None:
            return f"API server unreachable: {health.last_error}"
        return None

    def _rendering_slow(self) -> bool:
        """Whether the thread that renders slow keys runs (not in tests that only rebuild)."""
        return any(t.name == "snapshot-renders" and t.is_alive() for t in self._threads)

    def readiness(self) -> Readiness:
        health = self._source.health()
        if self._current is None or not health.synced:
            if self.last_error is not None:  # listed, but no build has succeeded yet
                return Readiness(False, False, f"snapshot build failed: {self.last_error}")
            return Readiness(False, False, "waiting for the first list of the cluster")
        reason = self.stale_reason
        if reason is not None:
            return Readiness(True, True, reason)
        return Readiness(True, False, "ok")

    def rebuild(self, *, keep_ages: bool = False) -> Snapshot:
        """Compute a snapshot from what the cache and the report store hold now.

        `keep_ages`: reckon agents' ages at the latest build's moment for them, unless
        that is `refresh_interval_s` old or an agent has turned stale since. A failure of
        any kind keeps the last good snapshot served, marked stale with the reason
        (`stale_reason`), and /readyz degraded, until a build succeeds again.
        """
        now = self._clock()
        self._built_at = now
        kept = self._ages_at if keep_ages and self._ages_hold(now) else None
        ages_at = kept if kept is not None else now
        generation = self._source.generation
        try:
            built = self._builder.build(self._source, now=now, ages_at=ages_at)
        except Exception as exc:
            self._publish_failure(exc, now=now)
            raise
        self._ages_at = ages_at
        snapshot = self._idle.with_history(built, now=now)
        self.last_error = None
        self._failed_since = None
        self._good = snapshot
        health = self._source.health()
        if health.failing_since is not None:
            age_s = max(0.0, (now - health.failing_since).total_seconds())
            snapshot = snapshot.model_copy(update={"stale": True, "stale_age_s": round(age_s, 1)})
        self._publish(snapshot)
        self.builds += 1
        self._refresh_derived(snapshot)

        def due() -> bool:  # the cluster changed since: that build comes first
            return self._source.generation != generation

        for cache in self._caches():
            if not cache.prerender(snapshot, due=due):
                break
        self._slow_wake.set()
        return snapshot

    def _refresh_derived(self, snapshot: Snapshot) -> None:
        with self._derived_lock:
            derived = list(self._derived.items())
        for name, value in derived:
            try:
                value.refresh(snapshot)
            except Exception:
                log.exception("working out %s ahead failed; it is worked out on request", name)

    def _ages_hold(self, now: datetime) -> bool:
        """Whether the latest reckoning of agents' ages may serve a build at `now`: less
        than `refresh_interval_s` old, and no agent fresh then has turned stale since.

        The store is walked (every report) once per reckoning, and again only when the
        moment found has come: a report received since turns stale after every agent that
        was fresh at the reckoning (its age was 0 then), and a renewal puts its agent's
        moment off, so the moment found can only come early, never late. None found (no
        fresh agent then) is asked again each time: a first report may set one."""
        ages_at = self._ages_at
        if ages_at is None or (now - ages_at).total_seconds() >= self._refresh_interval_s:
            return False
        at, stale_at = self._stale_at
        if at != ages_at or stale_at is None or stale_at <= now:
            stale_at = self._reports.next_stale_at(now=ages_at)
            self._stale_at = (ages_at, stale_at)
        return stale_at is None or stale_at > now

    def _publish(self, snapshot: Snapshot) -> None:
        for cache in self._caches():
            cache.publish(snapshot)
        self._current = snapshot

    def _publish_failure(self, exc: Exception, *, now: datetime) -> None:
        """Serve the last good snapshot marked stale, with the reason; /readyz says degraded."""
        self.last_error = f"{type(exc).__name__}: {exc}"[:500]
        if self._failed_since is None:
            self._failed_since = now
        good = self._good
        if good is None:
            return
        age_s = max(0.0, (now - self._failed_since).total_seconds())
        self._publish(good.model_copy(update={"stale": True, "stale_age_s": round(age_s, 1)}))

    def _render_slow(self) -> None:
        """Render the slow keys that were asked for again, for the newest snapshot."""
        while not self._stop.is_set():
            self._slow_wake.wait(0.25)
            self._slow_wake.clear()
            for cache in self._caches():
                cache.render_slow(self._stop)
                if self._stop.is_set():
                    return

    def _run(self) -> None:
        seen = -1
        while not self._stop.is_set():
            generation = self._source.generation
            self._wake.clear()  # a report from now on asks for the next build
            self._pokes_seen = self._pokes
            work_s = 0.0
            if self._source.health().synced:
                started = time.monotonic()
                try:
                    with outside_collections():
                        self.rebuild(keep_ages=True)
                except Exception:
                    log.exception("snapshot computation failed; serving the previous one")
                work_s = time.monotonic() - started
            seen = generation
            hold_s = min(max(work_s, self._min_interval_s), MAX_HOLD_S)
            self._pace(seen, hold_s)
            self._wait(seen, self._refresh_interval_s - hold_s)

    def _pace(self, seen: int, hold_s: float) -> None:
        """Hold back report-driven builds for `hold_s` (docs/PERFORMANCE.md, "Pacing").

        A change of the cluster itself (pods, nodes, the plugin) is not held back, nor is
        the first report of a node (its GPUs were unknown until then), nor a report with
        new readings when it came alone during the build: only a stream of them is batched.
        """
        if self._pokes - self._pokes_seen < STREAM_REPORTS:
            return
        deadline = time.monotonic() + hold_s
        while not self._stop.is_set():
            left_s = deadline - time.monotonic()
            if left_s <= 0 or len(self._reports) != self._builder.reported_nodes:
                return
            if self._source.wait_for_change(seen, min(STEP_S, left_s)) != seen:
                return

    def _wait(self, seen: int, deadline_s: float) -> None:
        """Until a report with new readings arrives (at once), the cache changes or an agent
        turns stale (within `STEP_S`), or `deadline_s` passes."""
        deadline = time.monotonic() + deadline_s
        stale_at = self._next_stale_at()
        while time.monotonic() < deadline and not self._stop.is_set():
            if self._wake.wait(STEP_S) or self._source.generation != seen:
                return
            if stale_at is not None and self._clock() >= stale_at:
                stale_at = self._next_stale_at()  # a renewal since may have put it off
                if stale_at is not None and self._clock() >= stale_at:
                    return

    def _next_stale_at(self) -> datetime | None:
        """When the next agent turns stale that was fresh at the latest build."""
        built_at = self._built_at
        return None if built_at is None else self._reports.next_stale_at(now=built_at)
