"""Renderings of the current snapshot, one kind per cache (JSON bodies, metrics, page HTML).

`memo(key, render)` renders a key once per snapshot. Keys requested in the last `HOT_KEY_S`
are rendered ahead for each new snapshot, cheapest first (`prerender`), so requests do not
render on the event loop; a request for a key being rendered (ahead, or for another
request) waits for that rendering: at 10,000 nodes sixteen readers of the overview each
rendering it for a new snapshot held the GIL for half a second. Slow keys
(`SLOW_RENDER_S`, twice running) are not redone for every snapshot: requests get the
latest rendering, and the slow-render thread renders them again for the newest snapshot
once they were asked for since (`render_slow`), spending at most half of the time on one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from app.domain.snapshot import Snapshot
from app.web.views.abandon import RenderAbandoned, abandon_when

log = logging.getLogger(__name__)

T = TypeVar("T")
HOT_KEY_S = 30.0  # a memo key requested this recently is rendered ahead for new snapshots
PENDING_WAIT_S = 30.0  # longest wait for a rendering in progress before rendering again
SLOW_RENDER_S = 0.1  # a key rendering this slowly (twice running) is refreshed on demand
# ... or once this slowly: the first rendering of a page also compiles its templates, but
# no template takes this long; every node's JSON at 5,000 nodes does (48 MB, ~2 s), and
# rendered ahead for every snapshot for the 30 s after one request it held up every build
VERY_SLOW_RENDER_S = 0.5


@dataclass
class _Renderer(Generic[T]):
    """A memo key: how to render it, when it was last asked for, its latest rendering."""

    render: Callable[[Snapshot], T]
    used_at: float  # time.monotonic() of the last request
    cost_s: float = 0.0  # how long the last rendering took
    cost_before_s: float = 0.0  # and the one before (the first also compiles templates)
    value: T | None = None  # the latest rendering ...
    of: Snapshot | None = None  # ... and the snapshot it shows
    wanted: bool = False  # a slow key was requested since its latest rendering
    rendered_at: float = 0.0  # time.monotonic() when the latest rendering was done

    @property
    def slow(self) -> bool:
        if self.cost_s >= VERY_SLOW_RENDER_S:
            return True
        return min(self.cost_s, self.cost_before_s) >= SLOW_RENDER_S


class RenderCache(Generic[T]):
    """The renderings of one kind of the published snapshot, keyed by what they show."""

    def __init__(self, *, slow_thread_runs: Callable[[], bool], wake_slow: Callable[[], None]):
        self._slow_thread_runs = slow_thread_runs
        self._wake_slow = wake_slow
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._memo: dict[str, T] = {}  # renderings of the published snapshot
        self._renderers: dict[str, _Renderer[T]] = {}
        self._pending: dict[str, threading.Event] = {}  # keys being rendered ahead, now

    def publish(self, snapshot: Snapshot) -> None:
        """A new snapshot: the renderings of the previous one are not served any more."""
        with self._lock:
            self._snapshot = snapshot
            self._memo = {}

    def memo(self, key: str, render: Callable[[Snapshot], T]) -> T | None:
        """`render(published snapshot)`, computed once per snapshot (see the module notes).

        `render` must depend on the snapshot only (the key names everything else): while
        the key is requested, the cache calls it for new snapshots ahead of time.
        """
        now = time.monotonic()
        with self._lock:
            snapshot = self._snapshot
            if snapshot is None:
                return None
            entry = self._renderers.get(key)
            if entry is None:
                entry = self._renderers[key] = _Renderer(render, now)
            else:
                entry.render, entry.used_at = render, now
            if key in self._memo:
                return self._memo[key]
            if entry.slow and entry.of is not None and self._slow_thread_runs():
                entry.wanted = True
                self._wake_slow()
                return entry.value
            pending = self._pending.get(key)
            if pending is None:  # this request renders it; others wait for it
                mine = self._pending[key] = threading.Event()
        if pending is not None:  # being rendered now (ahead, or for a request): wait
            pending.wait(PENDING_WAIT_S)
            with self._lock:
                if self._snapshot is snapshot and key in self._memo:
                    return self._memo[key]
                if entry.of is not None and entry.of.generated_at >= snapshot.generated_at:
                    return entry.value  # set with `of`
            return self._render(key, entry, snapshot)
        try:
            return self._render(key, entry, snapshot)
        finally:
            with self._lock:
                if self._pending.get(key) is mine:
                    del self._pending[key]
            mine.set()

    def _render(self, key: str, entry: _Renderer[T], snapshot: Snapshot) -> T:
        """Render `key` for `snapshot` here and now; keep it as the latest rendering."""
        started = time.monotonic()
        value = entry.render(snapshot)
        with self._lock:
            entry.rendered_at = time.monotonic()
            entry.cost_before_s, entry.cost_s = entry.cost_s, entry.rendered_at - started
            if entry.of is None or entry.of.generated_at <= snapshot.generated_at:
                entry.value, entry.of = value, snapshot
            if self._snapshot is snapshot:
                value = self._memo.setdefault(key, value)
        return value

    def _hot(self, *, slow: bool) -> list[tuple[str, _Renderer[T]]]:
        """Keys asked for lately, fast or slow ones, cheapest first; forgets the others."""
        now = time.monotonic()
        with self._lock:
            for key in [k for k, e in self._renderers.items() if now - e.used_at > HOT_KEY_S]:
                del self._renderers[key]
            hot = [(k, e) for k, e in self._renderers.items() if e.slow == slow]
        return sorted(hot, key=lambda item: item[1].cost_s)

    def prerender(self, snapshot: Snapshot, *, due: Callable[[], bool]) -> bool:
        """Render the fast hot keys for the just published `snapshot`; False (and stop) once
        a newer snapshot took over or `due()` says one is due: that is built first."""
        for key, entry in self._hot(slow=False):
            done = threading.Event()
            with self._lock:
                if self._snapshot is not snapshot or due():
                    return False
                if key in self._memo or key in self._pending:
                    continue  # a request rendered it already, or renders it now
                self._pending[key] = done
            try:
                with abandon_when(lambda: self._snapshot is not snapshot or due()):
                    self._render(key, entry, snapshot)
            except RenderAbandoned:
                return False  # a newer snapshot took over (or one is due): that comes first
            except Exception:
                log.exception("rendering %s ahead failed; it renders on request", key)
            finally:
                with self._lock:
                    if self._pending.get(key) is done:
                        del self._pending[key]
                done.set()
        return True

    def _replaced(self, snapshot: Snapshot) -> Callable[[], bool]:
        """Whether a newer snapshot replaced `snapshot` (a rendering of it can stop)."""
        return lambda: self._snapshot is not snapshot

    def render_slow(self, stop: threading.Event) -> None:
        """Render the slow keys that were asked for again, for the newest snapshot."""
        for key, entry in self._hot(slow=True):
            with self._lock:
                snapshot = self._snapshot
                if snapshot is None or not entry.wanted or entry.of is snapshot:
                    continue
                if time.monotonic() < entry.rendered_at + entry.cost_s:
                    continue  # at most half of the time on one slow key
                entry.wanted = False
            try:
                with abandon_when(self._replaced(snapshot)):
                    self._render(key, entry, snapshot)
            except RenderAbandoned:
                entry.wanted = True  # rendered again for the newer snapshot
            except Exception:
                log.exception("rendering %s failed; it renders again on request", key)
            if stop.is_set():
                return
