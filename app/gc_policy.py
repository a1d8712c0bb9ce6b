"""The cyclic garbage collector and the cache's big lists.

Why, with the figures: docs/decisions/0009-garbage-collection.md and docs/PERFORMANCE.md.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Lists at least this long are frozen out of the cyclic garbage collector (see freeze_listed()).
FREEZE_MIN_ITEMS = 1_000
GC_THRESHOLD = 10_000  # allocations between young collections once a big list is held
_GC_LOCK = threading.Lock()


def freeze_listed() -> None:
    """Keep the cyclic garbage collector off the manifests a big list just stored.

    Listed manifests live until a watch event replaces them and hold no reference cycles,
    so they are collected once and frozen (unfrozen first, so this collection frees what an
    earlier list froze and dropped); replaced ones are still freed by reference counting.
    The first generation's threshold is raised to GC_THRESHOLD, since a snapshot of a big
    cluster allocates far more than the default (figures: docs/PERFORMANCE.md).
    """
    with _GC_LOCK:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _raise_threshold()


def freeze_so_far() -> None:
    """Keep the collector off what a big list has stored so far, while more pages come.

    As a list grows, the cyclic collector's full collections (each one as the heap grows
    by a quarter) walk every stored object again; freezing after each page makes each
    page walked about once, and the first generation's threshold is raised at once (see
    freeze_listed()). freeze_listed() at the end collects once and freezes again.
    """
    with _GC_LOCK:
        gc.freeze()
        _raise_threshold()


def _raise_threshold() -> None:
    threshold, *older = gc.get_threshold()
    if threshold < GC_THRESHOLD:
        gc.set_threshold(GC_THRESHOLD, *older)


# Cycles among what builds froze are freed this often: few become garbage, and the collection
# walks everything, the cache's manifests too (figures: docs/PERFORMANCE.md).
FULL_COLLECTION_EVERY_S = 3600.0
_building = 0  # builds under way (one per snapshot service)
_was_enabled = True  # whether the collector ran before the first of them
_full_at: float | None = None  # time.monotonic() of the latest full collection after a build


@contextmanager
def outside_collections() -> Iterator[None]:
    """Run a snapshot build with the cyclic collector off; freeze what it keeps after it.

    A build makes big young containers (the pod list, the index's dicts, the node lists)
    that collections during it would walk with the GIL held; after it they are frozen, as
    the listed manifests are (freeze_listed()). Reference counting still frees what the next build
    replaces; cycles that became garbage among frozen objects are freed by a full collection
    at most every FULL_COLLECTION_EVERY_S, after a build. Overlapping builds count
    themselves: the collector is enabled again after the last (figures: docs/PERFORMANCE.md).
    """
    global _building, _was_enabled
    with _GC_LOCK:
        if _building == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _building += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _building -= 1
            _freeze_kept()
            if _building == 0 and _was_enabled:
                gc.enable()


def _freeze_kept() -> None:
    """Freeze what the build kept; unfreeze and collect everything first when it is time."""
    global _full_at
    now = time.monotonic()
    if _full_at is not None and now - _full_at >= FULL_COLLECTION_EVERY_S:
        gc.unfreeze()
        gc.collect()
        _full_at = now
    elif _full_at is None:
        _full_at = now
    gc.freeze()
