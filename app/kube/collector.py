"""The cyclic garbage collector and the cache's big lists (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import gc
import threading

# Lists at least this long are frozen out of the cyclic garbage collector (see settle()).
FREEZE_MIN_ITEMS = 1_000
GC_THRESHOLD = 10_000  # allocations between young collections once a big list is held
_GC_LOCK = threading.Lock()


def settle() -> None:
    """Keep the cyclic garbage collector off the manifests a big list just stored.

    Listed manifests live until a watch event replaces them and hold no reference cycles,
    yet every full collection walks all of them: at 30,000 pods (~1.5 million objects) one
    took ~0.7 s, about once per snapshot. Collecting first means nothing frozen is garbage;
    unfreezing first lets this collection free what an earlier list froze and dropped.
    Replaced manifests are still freed at once by reference counting.

    The first generation's threshold is raised too (700 -> 10,000 allocations): a snapshot
    of such a cluster allocates ~150,000 objects, and at the default every snapshot set off
    a couple of full collections (~0.15 s each) even with the manifests frozen.
    """
    with _GC_LOCK:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _raise_threshold()


def hold() -> None:
    """Keep the collector off what a big list has stored so far, while more pages come.

    As a list grows, the cyclic collector's full collections (each one as the heap grows
    by a quarter) walk every stored object again; freezing after each page makes each
    page walked about once, and the first generation's threshold is raised at once (see
    settle()). settle() at the end collects once and freezes again.
    """
    with _GC_LOCK:
        gc.freeze()
        _raise_threshold()


def _raise_threshold() -> None:
    threshold, *older = gc.get_threshold()
    if threshold < GC_THRESHOLD:
        gc.set_threshold(GC_THRESHOLD, *older)
