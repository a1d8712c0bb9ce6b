"""Renders that can be abandoned: a rendering ahead stops once its snapshot is not the newest.

Rendering ahead (app.web.services.snapshots.render_cache) runs on background threads for the
snapshot just published. A slow rendering of a snapshot that a newer one already replaced is
work for nothing, and could not be stopped (issue 33). The hot loops of a page (each GPU's
grid) call `check()`; inside `abandon_when(stale)` it raises RenderAbandoned once `stale()`
says so. A request's own rendering is never abandoned: it runs outside `abandon_when`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


class RenderAbandoned(Exception):
    """The rendering's snapshot is not the newest any more: the rest is not worth doing."""


@contextmanager
def abandon_when(stale: Callable[[], bool]) -> Iterator[None]:
    """Within: `check()` raises RenderAbandoned once `stale()` is true (this thread only)."""
    before = getattr(_local, "stale", None)
    _local.stale = stale
    try:
        yield
    finally:
        _local.stale = before


def check() -> None:
    """Raise RenderAbandoned when this thread renders for a snapshot no longer current."""
    stale = getattr(_local, "stale", None)
    if stale is not None and stale():
        raise RenderAbandoned
