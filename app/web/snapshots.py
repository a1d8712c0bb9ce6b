"""The current snapshot, recomputed off the request path when the cluster or a report changes.

Requests only read `current()`; the engine runs in one background thread, at most once per
`min_interval_s`, and again every `refresh_interval_s` so agent ages stay true. Rendered
forms of a snapshot (JSON bodies, metrics text, page fragments) are memoised per snapshot.

Two things keep a big cluster's dashboard responsive while every agent reports (1,000
nodes at a 15 s interval is 67 reports a second, each asking for a new snapshot):

- pacing: after a build the thread waits at least as long as that build (and its
  renders) took, so the engine uses at most about half of the process's time;
- pre-rendering: memo keys requested in the last `HOT_KEY_S` are rendered for the new
  snapshot in this thread, before it is published, so no request renders a big page or
  JSON body on the event loop (where it would hold up every other request).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from app.domain.accounting import build_snapshot
from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.pods import PodMemo
from app.domain.snapshot import Snapshot
from app.web.reports import ReportStore

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
T = TypeVar("T")
HOT_KEY_S = 30.0  # a memo key requested this recently is rendered ahead for new snapshots


class CacheHealthLike(Protocol):
    @property
    def synced(self) -> bool: ...

    @property
    def failing_since(self) -> datetime | None: ...

    @property
    def last_error(self) -> str | None: ...


class ClusterSource(Protocol):
    """What the snapshot service needs of the cluster cache (app.kube.cache.ClusterCache)."""

    generation: int

    def items(self, name: str) -> list[Manifest]: ...

    def health(self) -> CacheHealthLike: ...

    def wait_for_change(self, seen_generation: int, timeout_s: float) -> int: ...


@dataclass(frozen=True)
class Readiness:
    ready: bool
    degraded: bool
    reason: str


class SnapshotService:
    """Owns the background thread that turns cache + reports into the current snapshot."""

    def __init__(
        self,
        source: ClusterSource,
        reports: ReportStore,
        *,
        options: AccountingOptions,
        clock: Clock,
        min_interval_s: float = 0.2,
        refresh_interval_s: float = 5.0,
    ) -> None:
        self._source = source
        self._reports = reports
        self._options = options
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._refresh_interval_s = refresh_interval_s
        self._current: Snapshot | None = None
        self._memo: dict[str, object] = {}
        self._renderers: dict[str, tuple[Callable[[Snapshot], object], float]] = {}
        self._pods = PodMemo()
        self._last_build_s = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.builds = 0
        self.last_error: str | None = None

    def start(self) -> None:
        """Start the background thread (again after a stop: an app's lifespan may repeat)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="snapshots", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def poke(self) -> None:
        """Ask for a recompute soon (a report arrived)."""
        self._wake.set()

    def current(self) -> Snapshot | None:
        return self._current

    def memo(self, key: str, render: Callable[[Snapshot], T]) -> T | None:
        """`render(current snapshot)`, computed once per snapshot.

        `render` must depend on the snapshot only (the key names everything else): while
        the key is requested, the service calls it for each new snapshot ahead of time.
        """
        with self._lock:
            snapshot = self._current
            if snapshot is None:
                return None
            self._renderers[key] = (render, time.monotonic())
            if key not in self._memo:
                self._memo[key] = render(snapshot)
            return self._memo[key]  # type: ignore[return-value]

    def _prerender(self, snapshot: Snapshot) -> dict[str, object]:
        """The hot memo keys rendered for `snapshot`; keys not requested lately are dropped."""
        now = time.monotonic()
        with self._lock:
            renderers = list(self._renderers.items())
        rendered: dict[str, object] = {}
        for key, (render, used_at) in renderers:
            if now - used_at > HOT_KEY_S:
                with self._lock:
                    if self._renderers.get(key, (None, 0.0))[1] == used_at:
                        del self._renderers[key]
                continue
            try:
                rendered[key] = render(snapshot)
            except Exception:
                log.exception("rendering %s ahead failed; it renders on request", key)
        return rendered

    def readiness(self) -> Readiness:
        health = self._source.health()
        if self._current is None or not health.synced:
            return Readiness(False, False, "waiting for the first list of the cluster")
        if health.failing_since is not None:
            return Readiness(True, True, f"API server unreachable: {health.last_error}")
        return Readiness(True, False, "ok")

    def rebuild(self) -> Snapshot:
        """Compute a snapshot from what the cache and the report store hold now."""
        now = self._clock()
        daemonsets = self._source.items("daemonsets")
        state = ClusterState(
            daemonset=daemonsets[0] if daemonsets else None,
            configmaps={
                cm.get("metadata", {}).get("name", ""): cm
                for cm in self._source.items("configmaps")
            },
            nodes=self._source.items("nodes"),
            pods=self._source.items("pods"),
            reports=self._reports.latest(),
        )
        snapshot = build_snapshot(state, options=self._options, now=now, memo=self._pods)
        health = self._source.health()
        if health.failing_since is not None:
            age_s = max(0.0, (now - health.failing_since).total_seconds())
            snapshot = snapshot.model_copy(update={"stale": True, "stale_age_s": round(age_s, 1)})
        rendered = self._prerender(snapshot)
        with self._lock:
            self._current = snapshot
            self._memo = rendered
        self.builds += 1
        return snapshot

    def _run(self) -> None:
        seen = -1
        while not self._stop.is_set():
            generation = self._source.generation
            self._wake.clear()  # a report from now on asks for the next build
            if self._source.health().synced:
                started = time.monotonic()
                try:
                    self.rebuild()
                    self.last_error = None
                except Exception as exc:
                    self.last_error = repr(exc)
                    log.exception("snapshot computation failed; serving the previous one")
                self._last_build_s = time.monotonic() - started
            seen = generation
            if self._stop.wait(max(self._min_interval_s, self._last_build_s)):
                return
            self._wait(seen)

    def _wait(self, seen: int) -> None:
        """Until the cache changes, a report arrives, or the refresh interval passes."""
        deadline_s = self._refresh_interval_s
        step_s = 0.05
        waited_s = 0.0
        while waited_s < deadline_s and not self._stop.is_set():
            if self._wake.is_set():
                return
            if self._source.wait_for_change(seen, step_s) != seen:
                return
            waited_s += step_s
