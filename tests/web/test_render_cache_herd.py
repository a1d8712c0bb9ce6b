"""Readers of a key for a new snapshot wait for one rendering instead of each rendering it
(issue 30: at 10,000 nodes sixteen readers of the overview page each rendered it for every
new snapshot, holding the GIL for half a second)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from app.domain.snapshot import Snapshot
from app.web.services.snapshots.render_cache import RenderCache
from tests.domain.worlds import snap, world


def _cache() -> RenderCache[str]:
    return RenderCache(slow_thread_runs=lambda: False, wake_slow=lambda: None)


def test_readers_of_a_new_snapshot_wait_for_one_rendering() -> None:
    cache = _cache()
    snapshot = snap(world())
    cache.publish(snapshot)
    renders: list[Snapshot] = []
    started = threading.Event()

    def render(shown: Snapshot) -> str:
        renders.append(shown)
        started.set()
        time.sleep(0.2)  # long enough for every reader to arrive meanwhile
        return "page"

    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(cache.memo, "page:overview:en", render)
        assert started.wait(5)
        others = [pool.submit(cache.memo, "page:overview:en", render) for _ in range(7)]
        bodies = [first.result(5)] + [other.result(5) for other in others]
    assert bodies == ["page"] * 8
    assert renders == [snapshot]


def test_a_failed_rendering_lets_the_next_reader_render() -> None:
    cache = _cache()
    cache.publish(snap(world()))

    def broken(_shown: Snapshot) -> str:
        raise RuntimeError("template error")

    for _ in range(2):  # the first failure leaves nothing pending behind it
        try:
            cache.memo("page:overview:en", broken)
        except RuntimeError:
            pass
        else:
            raise AssertionError("the rendering should have failed")
    assert cache.memo("page:overview:en", lambda _shown: "page") == "page"
