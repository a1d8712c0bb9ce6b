"""A value worked out from the published snapshot and inputs read beside it, ahead of requests.

Like the renderings (app.web.services.snapshots.render_cache), but for a value that also
depends on what the watch cache holds now (the plugin's rollout status: its DaemonSet's
generation and record, the expected settings). `inputs()` reads those cheaply and is compared
by value; `compute(snapshot, inputs)` does the costly part. While the value was asked for in
the last `HOT_KEY_S`, the build thread works it out after each published snapshot
(`refresh`); a request (`get`) never waits while a value for its inputs is held:

- computed for this snapshot and these inputs: served;
- for the same inputs and an older snapshot, while the build thread follows the value: the
  older one is served (the next one is worked out, at most one build behind, like the page);
- for the same inputs while another thread works them out: the older one is served;
- other inputs (an admin's change, seen by the cache before any build), or a first ask after
  a quiet while: the request works it out itself, and keeps it for the others; requests
  that come while it does wait for its value rather than each working out the same (at
  10,000 nodes each would cost about 0.25 s of CPU, all of them under one GIL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from app.domain.snapshot import Snapshot
from app.web.services.snapshots.render_cache import HOT_KEY_S

K = TypeVar("K")
T = TypeVar("T")


@dataclass(frozen=True)
class _Held(Generic[K, T]):
    snapshot: Snapshot | None  # compared by identity
    inputs: K  # compared by value
    value: T


class Derived(Generic[K, T]):
    """The latest value `compute` gave, for which snapshot and inputs (see the module notes)."""

    def __init__(
        self, inputs: Callable[[], K | None], compute: Callable[[Snapshot | None, K], T]
    ) -> None:
        self._inputs = inputs  # None: nothing to work out now
        self._compute = compute
        self._lock = threading.Lock()
        self._worked_out = threading.Condition(self._lock)  # notified as a computation ends
        self._held: _Held[K, T] | None = None
        self._asked_at = float("-inf")  # time.monotonic() of the latest request
        self._followed = False  # the build thread works it out for each new snapshot
        self._working: list[K] = []  # the inputs being worked out now (by whichever thread)
        self._cost_s = 0.0  # how long the latest computation took
        self._done_at = 0.0  # ... and when it ended (time.monotonic())

    def get(self, snapshot: Snapshot | None, inputs: K) -> T:
        """The value for `snapshot` and `inputs`, or the one before it; a wait only for
        inputs no value is held for, while another thread works them out."""
        with self._lock:
            self._asked_at = time.monotonic()
            held = self._held
            if held is not None and held.inputs == inputs and self._serves(held, snapshot):
                return held.value
            if inputs in self._working:
                self._worked_out.wait_for(lambda: inputs not in self._working)
                held = self._held
                if held is not None and held.inputs == inputs:
                    return held.value
        return self._work_out(snapshot, inputs)

    def _serves(self, held: _Held[K, T], snapshot: Snapshot | None) -> bool:
        """Whether `held` (for the inputs asked) serves a request for `snapshot`."""
        return held.snapshot is snapshot or self._followed or held.inputs in self._working

    def refresh(self, snapshot: Snapshot) -> None:
        """The build thread, after publishing `snapshot`: work the value out for it while
        it is asked for, spending at most half of the time on it (a value that takes longer
        than the builds is served one build older)."""
        now = time.monotonic()
        with self._lock:
            self._followed = now - self._asked_at <= HOT_KEY_S
            if not self._followed or now < self._done_at + self._cost_s:
                return
        inputs = self._inputs()
        if inputs is None:
            return
        with self._lock:
            held = self._held
            if held is not None and held.snapshot is snapshot and held.inputs == inputs:
                return
        self._work_out(snapshot, inputs)

    def _work_out(self, snapshot: Snapshot | None, inputs: K) -> T:
        started = time.monotonic()
        with self._lock:
            self._working.append(inputs)
        try:
            value = self._compute(snapshot, inputs)
            with self._lock:
                self._done_at = time.monotonic()
                self._cost_s = self._done_at - started
                held = self._held
                if held is None or not _older(snapshot, held.snapshot):
                    self._held = _Held(snapshot, inputs, value)
        finally:
            with self._lock:
                self._working.remove(inputs)
                self._worked_out.notify_all()
        return value


def _older(snapshot: Snapshot | None, than: Snapshot | None) -> bool:
    """Whether `snapshot` was built before `than` (a late computation keeps the newer one)."""
    if snapshot is None or than is None:
        return snapshot is None and than is not None
    return snapshot.generated_at < than.generated_at
