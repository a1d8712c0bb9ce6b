"""Which renderings the cache refreshes on demand instead of ahead of every snapshot."""

from __future__ import annotations

from app.web.services.snapshots.render_cache import SLOW_RENDER_S, VERY_SLOW_RENDER_S, _Renderer


def _renderer(cost_s: float, cost_before_s: float) -> _Renderer[bytes]:
    return _Renderer(lambda _s: b"", 0.0, cost_s=cost_s, cost_before_s=cost_before_s)


def test_one_slow_rendering_may_be_a_templates_first_compile() -> None:
    assert not _renderer(SLOW_RENDER_S * 2, 0.0).slow
    assert _renderer(SLOW_RENDER_S * 2, SLOW_RENDER_S * 2).slow


def test_one_very_slow_rendering_is_enough() -> None:
    """Issue 30: every node's JSON at 5,000 nodes (~2 s) was rendered ahead for every
    snapshot for 30 s after a single request, and every build waited for it."""
    assert _renderer(VERY_SLOW_RENDER_S, 0.0).slow
