"""Run a memory-hungry step of the benchmark in a forked child, so its peak leaves with it.

At 10,000 nodes the engine's in-process timing reads 300,000 pods and the kubectl way parses
~1 GB of JSON: in the benchmark's own process, memory the allocator never gives back would
sit beside the simulator, the dashboard and the next kubectl run.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def in_child(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`function(*args, **kwargs)` in a forked child; its result (picklable) comes back."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.apply(function, args, kwargs)
