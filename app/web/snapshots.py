"""The current snapshot, recomputed off the request path when the cluster or a report changes.

Requests only read `current()`; the engine runs in one background thread, at most once per
`min_interval_s`, and again every `refresh_interval_s` so agent ages stay true. Rendered
forms of a snapshot (JSON bodies, metrics text, page fragments) are memoised per snapshot.

What keeps a big cluster's dashboard responsive while every agent reports (1,000 nodes at a
15 s interval is 67 reports a second, each asking for a new snapshot):

- the engine memo: pods and nodes that did not change are not recomputed (EngineMemo);
- pacing: after a build, report-driven builds wait as long as that build (and its
  renders) took, at least `min_interval_s` and at most `MAX_HOLD_S`, so the engine uses
  about half of the process's time while reports stream in (more on a cluster whose
  builds take longer than `MAX_HOLD_S`), and reports arriving meanwhile are taken in one
  batch; a change of the cluster itself (a pod, a node) or a node's first report is never
  held back: it is built as soon as the build in progress ends (`gpu-slots serve` sets a
  1 ms GIL switch interval, so back-to-back builds leave the event loop its share);
- rendering ahead: memo keys requested in the last `HOT_KEY_S` are rendered for each new
  snapshot in the snapshot thread right after it is published, cheapest first, so
  requests do not render JSON bodies on the event loop (where they would hold up every
  other request); a request for a key being rendered waits for that rendering; a change
  of the cluster arriving meanwhile stops the rendering ahead: its build comes first;
- slow renderings (`SLOW_RENDER_S`, e.g. every node's JSON at 1,000 nodes: ~0.15 s) are
  not redone for every snapshot: requests get the latest one, and a second thread renders
  the key again for the newest snapshot once it has been requested since (and, under a
  flood of requests, spends at most half of the time on it). Such a body may thus be one
  rendering behind the summary; it carries its own `generated_at`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo
from app.domain.findings.usage import history_findings, with_findings
from app.domain.snapshot import Finding, Snapshot
from app.domain.usage.idle import UsageHistory
from app.web.reports import ReportStore

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
T = TypeVar("T")
HOT_KEY_S = 30.0  # a memo key requested this recently is rendered ahead for new snapshots
PENDING_WAIT_S = 30.0  # longest wait for a rendering in progress before rendering again
SLOW_RENDER_S = 0.1  # a key rendering this slowly (twice running) is refreshed on demand
# Report-driven builds wait at most this long after a build: a pause as long as a slow
# build would take in more reports, so the next build would be slower still (at 5,000
# nodes and 333 reports/s, builds and delays grew without bound).
MAX_HOLD_S = 0.15
HISTORY_EVERY_S = 1.0  # idle-slot findings are reckoned at most this often
STEP_S = 0.01  # how often a waiting snapshot thread looks at what it is not woken by


class CacheHealthLike(Protocol):
    @property
    def synced(self) -> bool: ...

    @property
    def failing_since(self) -> datetime | None: ...

    @property
    def last_error(self) -> str | None: ...

    @property
    def refused(self) -> bool: ...


class ClusterSource(Protocol):
    """What the snapshot service needs of the cluster cache (app.kube.cache.ClusterCache)."""

    generation: int

    def items(self, name: str) -> list[Manifest]: ...

    def health(self) -> CacheHealthLike: ...

    def wait_for_change(self, seen_generation: int, timeout_s: float) -> int: ...


@dataclass
class _Renderer:
    """A memo key: how to render it, when it was last asked for, its latest rendering."""

    render: Callable[[Snapshot], object]
    used_at: float  # time.monotonic() of the last request
    cost_s: float = 0.0  # how long the last rendering took
    cost_before_s: float = 0.0  # and the one before (the first also compiles templates)
    value: object = None  # the latest rendering ...
    of: Snapshot | None = None  # ... and the snapshot it shows
    wanted: bool = False  # a slow key was requested since its latest rendering
    rendered_at: float = 0.0  # time.monotonic() when the latest rendering was done

    @property
    def slow(self) -> bool:
        return min(self.cost_s, self.cost_before_s) >= SLOW_RENDER_S


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
        min_interval_s: float = 0.1,
        refresh_interval_s: float = 5.0,
        idle_after_s: float = 900.0,
        low_after_s: float = 1800.0,
    ) -> None:
        self._source = source
        self._reports = reports
        self._options = options
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._refresh_interval_s = refresh_interval_s
        self._current: Snapshot | None = None
        self._memo: dict[str, object] = {}  # renderings of the current snapshot
        self._renderers: dict[str, _Renderer] = {}
        self._pending: dict[str, threading.Event] = {}  # keys being rendered ahead, now
        self._engine_memo = EngineMemo()
        self.usage = UsageHistory()  # idle slots and utilization, last hour (observe: builds)
        self._idle_after_s, self._low_after_s = idle_after_s, low_after_s
        self._history: list[Finding] = []  # the idle-history findings of ...
        self._history_at: datetime | None = None  # ... this moment
        self._reported_nodes = 0  # nodes with a report in the latest build
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._slow_wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self.builds = 0
        self.last_error: str | None = None  # why the latest build failed; None after a good one
        self._good: Snapshot | None = None  # the latest snapshot a build produced
        self._failed_since: datetime | None = None
        self._node_names: frozenset[str] = frozenset()

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
        """Ask for a recompute soon (a report arrived)."""
        self._wake.set()

    def current(self) -> Snapshot | None:
        return self._current

    def has_node(self, name: str) -> bool:
        """Whether the cluster had node `name` at the latest build (any, before the first).

        Before the first build every report is kept; that build sorts them out.
        """
        return self.builds == 0 or name in self._node_names

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

    def memo(self, key: str, render: Callable[[Snapshot], T]) -> T | None:
        """`render(current snapshot)`, computed once per snapshot (see the module notes).

        `render` must depend on the snapshot only (the key names everything else): while
        the key is requested, the service calls it for new snapshots ahead of time.
        """
        now = time.monotonic()
        with self._lock:
            snapshot = self._current
            if snapshot is None:
                return None
            entry = self._renderers.get(key)
            if entry is None:
                entry = self._renderers[key] = _Renderer(render, now)
            else:
                entry.render, entry.used_at = render, now
            if key in self._memo:
                return self._memo[key]  # type: ignore[return-value]
            if entry.slow and entry.of is not None and self._rendering_slow():
                entry.wanted = True
                self._slow_wake.set()
                return entry.value  # type: ignore[return-value]
            pending = self._pending.get(key)
        if pending is not None:  # the snapshot thread is rendering it now: wait, don't redo
            pending.wait(PENDING_WAIT_S)
            with self._lock:
                if self._current is snapshot and key in self._memo:
                    return self._memo[key]  # type: ignore[return-value]
        return self._render(key, entry, snapshot)  # type: ignore[return-value]

    def _rendering_slow(self) -> bool:
        """Whether the thread that renders slow keys runs (not in tests that only rebuild)."""
        return any(t.name == "snapshot-renders" and t.is_alive() for t in self._threads)

    def _render(self, key: str, entry: _Renderer, snapshot: Snapshot) -> object:
        """Render `key` for `snapshot` here and now; keep it as the latest rendering."""
        started = time.monotonic()
        value = entry.render(snapshot)
        with self._lock:
            entry.rendered_at = time.monotonic()
            entry.cost_before_s, entry.cost_s = entry.cost_s, entry.rendered_at - started
            if entry.of is None or entry.of.generated_at <= snapshot.generated_at:
                entry.value, entry.of = value, snapshot
            if self._current is snapshot:
                value = self._memo.setdefault(key, value)
        return value

    def _hot(self, *, slow: bool) -> list[tuple[str, _Renderer]]:
        """Keys asked for lately, fast or slow ones, cheapest first; forgets the others."""
        now = time.monotonic()
        with self._lock:
            for key in [k for k, e in self._renderers.items() if now - e.used_at > HOT_KEY_S]:
                del self._renderers[key]
            hot = [(k, e) for k, e in self._renderers.items() if e.slow == slow]
        return sorted(hot, key=lambda item: item[1].cost_s)

    def _prerender(self, snapshot: Snapshot, generation: int) -> None:
        """Render the fast hot keys for the just published `snapshot` (built from the
        cache's `generation`), unless the cluster changed since: that is built first."""
        for key, entry in self._hot(slow=False):
            done = threading.Event()
            with self._lock:
                if self._current is not snapshot or self._source.generation != generation:
                    return  # a newer snapshot took over, or is due
                if key in self._memo:
                    continue  # a request rendered it already
                self._pending[key] = done
            try:
                self._render(key, entry, snapshot)
            except Exception:
                log.exception("rendering %s ahead failed; it renders on request", key)
            finally:
                with self._lock:
                    if self._pending.get(key) is done:
                        del self._pending[key]
                done.set()

    def _render_slow(self) -> None:
        """Render the slow keys that were asked for again, for the newest snapshot."""
        while not self._stop.is_set():
            self._slow_wake.wait(0.25)
            self._slow_wake.clear()
            for key, entry in self._hot(slow=True):
                with self._lock:
                    snapshot = self._current
                    if snapshot is None or not entry.wanted or entry.of is snapshot:
                        continue
                    if time.monotonic() < entry.rendered_at + entry.cost_s:
                        continue  # at most half of the time on one slow key
                    entry.wanted = False
                try:
                    self._render(key, entry, snapshot)
                except Exception:
                    log.exception("rendering %s failed; it renders again on request", key)
                if self._stop.is_set():
                    return

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

    def rebuild(self) -> Snapshot:
        """Compute a snapshot from what the cache and the report store hold now.

        A failure of any kind keeps the last good snapshot served, marked stale with the
        reason (`stale_reason`), and /readyz degraded, until a build succeeds again.
        """
        now = self._clock()
        generation = self._source.generation
        try:
            state = self._state(now)
            snapshot = build_snapshot(state, options=self._options, now=now, memo=self._engine_memo)
        except Exception as exc:
            self._engine_memo = EngineMemo()  # it may hold half of the failed build
            self._publish_failure(exc, now=now)
            raise
        snapshot = self._with_history(snapshot, now=now)
        self.last_error = None
        self._failed_since = None
        self._good = snapshot
        self._reported_nodes = len(state.reports)
        health = self._source.health()
        if health.failing_since is not None:
            age_s = max(0.0, (now - health.failing_since).total_seconds())
            snapshot = snapshot.model_copy(update={"stale": True, "stale_age_s": round(age_s, 1)})
        with self._lock:
            self._current = snapshot
            self._memo = {}
        self.builds += 1
        self._prerender(snapshot, generation)
        self._slow_wake.set()
        return snapshot

    def _with_history(self, snapshot: Snapshot, *, now: datetime) -> Snapshot:
        """The snapshot plus the findings only the idle history can tell (idle slots).

        They are about slots idle for many minutes, so they are reckoned at most once per
        `HISTORY_EVERY_S` (every holder of every GPU is looked at): a build in between
        adds the latest ones again.
        """
        self.usage.observe(snapshot, now=now)
        last = self._history_at
        if last is None or not 0 <= (now - last).total_seconds() < HISTORY_EVERY_S:
            self._history = history_findings(
                self.usage, now=now, idle_after_s=self._idle_after_s, low_after_s=self._low_after_s
            )
            self._history_at = now
        return with_findings(snapshot, self._history)

    def _state(self, now: datetime) -> ClusterState:
        """What the engine reads: the cache's collections and the reports of known nodes."""
        daemonsets = self._source.items("daemonsets")
        nodes = self._source.items("nodes")
        self._node_names = frozenset(
            str((node.get("metadata") or {}).get("name", "")) for node in nodes
        )
        self._reports.forget_unknown(nodes=self._node_names, now=now)
        return ClusterState(
            daemonset=configured_daemonset(daemonsets, self._options),
            configmaps=configmaps_by_key(
                self._source.items("configmaps"), self._options.plugin_namespace
            ),
            nodes=nodes,
            pods=self._source.items("pods"),
            reports=self._reports.latest(),
            device_classes=self._source.items("deviceclasses"),
            resource_slices=self._source.items("resourceslices"),
            resource_claims=self._source.items("resourceclaims"),
            daemonsets=daemonsets,
        )

    def _publish_failure(self, exc: Exception, *, now: datetime) -> None:
        """Serve the last good snapshot marked stale, with the reason; /readyz says degraded."""
        self.last_error = f"{type(exc).__name__}: {exc}"[:500]
        if self._failed_since is None:
            self._failed_since = now
        good = self._good
        if good is None:
            return
        age_s = max(0.0, (now - self._failed_since).total_seconds())
        stale = good.model_copy(update={"stale": True, "stale_age_s": round(age_s, 1)})
        with self._lock:
            self._current = stale
            self._memo = {}

    def _run(self) -> None:
        seen = -1
        while not self._stop.is_set():
            generation = self._source.generation
            self._wake.clear()  # a report from now on asks for the next build
            work_s = 0.0
            if self._source.health().synced:
                started = time.monotonic()
                try:
                    self.rebuild()
                except Exception:
                    log.exception("snapshot computation failed; serving the previous one")
                work_s = time.monotonic() - started
            seen = generation
            hold_s = min(max(work_s, self._min_interval_s), MAX_HOLD_S)
            self._pace(seen, hold_s)
            self._wait(seen, self._refresh_interval_s - hold_s)

    def _pace(self, seen: int, hold_s: float) -> None:
        """Hold back report-driven builds for `hold_s` (see the module notes).

        A change of the cluster itself (pods, nodes, the plugin) is not held back, nor is
        the first report of a node (its GPUs were unknown until then).
        """
        deadline = time.monotonic() + hold_s
        while not self._stop.is_set():
            left_s = deadline - time.monotonic()
            if left_s <= 0 or len(self._reports) != self._reported_nodes:
                return
            if self._source.wait_for_change(seen, min(STEP_S, left_s)) != seen:
                return

    def _wait(self, seen: int, deadline_s: float) -> None:
        """Until a report arrives (at once), the cache changes (within `STEP_S`), or
        `deadline_s` passes."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline and not self._stop.is_set():
            if self._wake.wait(STEP_S) or self._source.generation != seen:
                return


def configured_daemonset(daemonsets: list[Manifest], options: AccountingOptions) -> Manifest | None:
    """The DaemonSet GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAME names, among all watched ones."""
    for daemonset in daemonsets:
        meta = daemonset.get("metadata") or {}
        if meta.get("name") == options.plugin_name and (
            meta.get("namespace") in (None, options.plugin_namespace)
        ):
            return daemonset
    return None


def configmaps_by_key(configmaps: list[Manifest], plugin_namespace: str) -> dict[str, Manifest]:
    """The plugin namespace's ConfigMaps by name, other namespaces' by namespace/name."""
    found: dict[str, Manifest] = {}
    for configmap in configmaps:
        meta = configmap.get("metadata") or {}
        namespace = meta.get("namespace") or plugin_namespace
        name = str(meta.get("name", ""))
        found[name if namespace == plugin_namespace else f"{namespace}/{name}"] = configmap
    return found
