"""A paced plugin rollout: node by node, old pod Terminating, new pod ContainerCreating.

With a pace of zero (the default, and what most tests use) the controller replaces a
plugin pod at once. With a pace, each node's replacement runs on this worker thread, one
node at a time (the DaemonSet's `maxUnavailable: 1`): the old pod shows `Terminating`
(deletionTimestamp set) for `terminating_s`, then the new pod waits in
`ContainerCreating` for `creating_s`, then it starts with what the plugin does on that
node. `kubectl rollout status` and the dashboard's rollout view then see real progress.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutPace:
    """Seconds a replaced plugin pod spends Terminating, and its successor ContainerCreating."""

    terminating_s: float = 0.0
    creating_s: float = 0.0

    def __post_init__(self) -> None:
        if not (0 <= self.terminating_s <= 600 and 0 <= self.creating_s <= 600):
            raise ValueError("rollout pace: seconds must be between 0 and 600")

    @property
    def paced(self) -> bool:
        return self.terminating_s > 0 or self.creating_s > 0


# The steps of one node's replacement, called by the worker in order.
Step = Callable[[str], bool]  # returns False when there is nothing more to do on the node


class RolloutWorker:
    """Runs node replacements one after another on a daemon thread.

    `stop()` finishes the queued replacements without waiting (so no pod is left
    ContainerCreating); until `resume()`, `submit()` refuses, and the controller replaces
    pods at once.
    """

    def __init__(
        self, pace: RolloutPace, *, terminate: Step, create: Step, start: Callable[[str], None]
    ) -> None:
        self.pace = pace
        self._terminate = terminate
        self._create = create
        self._start = start
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rolling: set[str] = set()
        self._lock = threading.Lock()

    def submit(self, node: str) -> bool:
        """Queue a node's replacement; False when stopped (the caller replaces at once)."""
        with self._lock:
            if self._stop.is_set():
                return False
            if node not in self._rolling:
                self._rolling.add(node)
                self._queue.put(node)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="sim-rollout", daemon=True)
                self._thread.start()
        return True

    def is_rolling(self, node: str) -> bool:
        with self._lock:
            return node in self._rolling

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            thread = self._thread
            self._queue.put(None)
        if thread is not None:
            thread.join(timeout=10)
        self._thread = None

    def resume(self) -> None:
        with self._lock:
            self._stop.clear()

    def _run(self) -> None:
        while True:
            node = self._queue.get()
            if node is None:
                return
            try:
                if self._terminate(node):
                    self._stop.wait(self.pace.terminating_s)
                    if self._create(node):
                        self._stop.wait(self.pace.creating_s)
            except Exception:  # one node's failure must not stop the others
                log.exception("simulated rollout on %s failed", node)
            finally:
                with self._lock:
                    self._rolling.discard(node)
            try:
                self._start(node)
            except Exception:
                log.exception("simulated rollout on %s failed to finish", node)
