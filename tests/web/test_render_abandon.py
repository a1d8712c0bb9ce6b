"""Renderings ahead are abandoned once their snapshot is replaced (issue 33).

A slow rendering of a snapshot a newer one already replaced could not be stopped; the page's
hot loops now call `check()`, which stops a rendering ahead (never a request's own).
"""

from __future__ import annotations

from app.domain.snapshot import Snapshot
from app.web.services.snapshots.render_cache import RenderCache
from app.web.views.abandon import check
from tests.domain.worlds import snap, world


def _cache() -> RenderCache[str]:
    return RenderCache(slow_thread_runs=lambda: True, wake_slow=lambda: None)


def test_a_rendering_ahead_stops_when_a_newer_snapshot_is_published() -> None:
    cache = _cache()
    first, second, third = (snap(world()) for _ in range(3))
    gpus_drawn: list[int] = []

    def render(shown: Snapshot) -> str:
        for gpu in range(1000):  # one check per GPU, as the slot grids do
            if shown is second and gpu == 10:
                cache.publish(third)  # the cluster changed meanwhile
            check()
            gpus_drawn.append(gpu)
        return "page"

    cache.publish(first)
    assert cache.memo("page", render) == "page"  # a request: hot from now on
    gpus_drawn.clear()
    cache.publish(second)

    assert cache.prerender(second, due=lambda: False) is False
    assert len(gpus_drawn) == 10  # stopped at the first check after the change, not 1,000
    gpus_drawn.clear()
    assert cache.prerender(third, due=lambda: False) is True  # the newest is rendered whole
    assert len(gpus_drawn) == 1000


def test_a_requests_own_rendering_is_never_abandoned() -> None:
    cache = _cache()
    first, second = snap(world()), snap(world())
    cache.publish(first)

    def render(shown: Snapshot) -> str:
        cache.publish(second)
        check()  # outside a rendering ahead: no effect
        return "page"

    assert cache.memo("page", render) == "page"
