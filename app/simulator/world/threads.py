"""Stopping the simulator's background loops (timeline, agents, the node actor)."""

from __future__ import annotations

import threading


def stop_thread(
    stop: threading.Event, thread: threading.Thread | None, *, timeout_s: float
) -> None:
    """Tell a loop to stop and wait for its thread, at most `timeout_s`."""
    stop.set()
    if thread is not None:
        thread.join(timeout=timeout_s)
