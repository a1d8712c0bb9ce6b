"""The cyclic garbage collector around snapshot builds (issue 30): off during a build, the
build's results frozen out of it after, cycles among them freed by a later full collection."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from app import gc_policy
from app.gc_policy import outside_collections


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_build_runs_with_the_collector_off_and_what_it_keeps_is_frozen() -> None:
    assert gc.isenabled()
    before = gc.get_freeze_count()
    with outside_collections():
        assert not gc.isenabled()
        kept = [[index] for index in range(1_000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)


def test_overlapping_builds_leave_the_collector_as_it_was() -> None:
    ended = threading.Event()

    def other_build() -> None:
        with outside_collections():
            pass
        ended.set()

    with outside_collections():
        thread = threading.Thread(target=other_build)
        thread.start()
        thread.join()
        assert ended.is_set()
        assert not gc.isenabled()  # the other build ended; this one still runs
    assert gc.isenabled()

    gc.disable()  # a process that runs without the collector keeps it off
    try:
        with outside_collections():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cycles_frozen_by_a_build_are_freed_by_the_next_full_collection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gc_policy, "FULL_COLLECTION_EVERY_S", 3600.0)
    monkeypatch.setattr(gc_policy, "_full_at", time.monotonic())
    with outside_collections():
        garbage = weakref.ref(_Cycle())  # unreachable at once, freed by no reference count
    gc.collect()
    assert garbage() is not None  # frozen: no collection looks at it

    monkeypatch.setattr(gc_policy, "FULL_COLLECTION_EVERY_S", 0.0)  # the time has come
    with outside_collections():
        pass
    assert garbage() is None
