"""Read your writes: after a change is written, the next read sees it, not the cache's past."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import cast

from app.domain.cluster import Manifest
from app.web.services.changes.pipeline import ChangeContext, await_read_back


def _obj(version: str, kind: str = "DaemonSet") -> Manifest:
    return {
        "kind": kind,
        "metadata": {"namespace": "kube-system", "name": "plugin", "resourceVersion": version},
    }


class LaggingCache:
    """A watch cache that shows the written version only after `lag` reads."""

    def __init__(self, lag: int) -> None:
        self.reads = 0
        self.lag = lag

    def items(self, collection: str, namespace: str | None = None) -> list[Manifest]:
        self.reads += 1
        return [_obj("2" if self.reads > self.lag else "1")]


def _ctx(cache: LaggingCache) -> ChangeContext:
    return cast(ChangeContext, SimpleNamespace(source=cache))


def test_waits_until_the_cache_holds_the_written_version() -> None:
    cache = LaggingCache(lag=5)
    await_read_back(_ctx(cache), [_obj("2"), None])
    assert cache.reads == 6  # returned at the first read that shows the write


def test_an_object_written_twice_is_waited_for_in_its_last_version() -> None:
    cache = LaggingCache(lag=2)
    started = time.monotonic()
    await_read_back(_ctx(cache), [_obj("1"), _obj("2")], wait_s=1.0)
    assert cache.reads == 3
    assert time.monotonic() - started < 0.5


def test_kinds_the_cache_does_not_watch_and_unversioned_answers_cost_no_wait() -> None:
    cache = LaggingCache(lag=10**9)
    await_read_back(_ctx(cache), [_obj("2", kind="Event"), {"kind": "DaemonSet", "metadata": {}}])
    assert cache.reads == 0


def test_a_cache_that_never_catches_up_costs_a_bounded_wait() -> None:
    cache = LaggingCache(lag=10**9)
    started = time.monotonic()
    await_read_back(_ctx(cache), [_obj("2")], wait_s=0.2)
    assert 0.2 <= time.monotonic() - started < 1.5
