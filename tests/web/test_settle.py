"""Read your writes: after a change is written, the next read sees it, not the cache's past."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import cast

from app.domain.cluster import Manifest
from app.web.services.change_pipeline import ChangeContext, settle


def _obj(version: str) -> Manifest:
    return {"metadata": {"namespace": "kube-system", "name": "plugin", "resourceVersion": version}}


class LaggingCache:
    """A watch cache that shows the written version only after `lag` reads."""

    def __init__(self, lag: int) -> None:
        self.reads = 0
        self.lag = lag

    def items(self, collection: str) -> list[Manifest]:
        self.reads += 1
        return [_obj("2" if self.reads > self.lag else "1")]


def _ctx(cache: LaggingCache) -> ChangeContext:
    return cast(ChangeContext, SimpleNamespace(source=cache))


def test_waits_until_the_cache_holds_the_written_version() -> None:
    cache = LaggingCache(lag=5)
    settle(_ctx(cache), {"daemonsets": _obj("2"), "configmaps": None})
    assert cache.reads == 6  # returned at the first read that shows the write


def test_a_cache_that_never_catches_up_costs_a_bounded_wait() -> None:
    cache = LaggingCache(lag=10**9)
    started = time.monotonic()
    settle(_ctx(cache), {"daemonsets": _obj("2")}, wait_s=0.2)
    assert 0.2 <= time.monotonic() - started < 1.5
