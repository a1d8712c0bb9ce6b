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
        if self.terminating_s < 0 or self.creating_s < 0 or self.terminating_s > 600:
            raise ValueError("rollout pace: seconds must be between 0 and 600")
        if self.creating_s > 600:
            raise ValueError("rollout pace: seconds must be between 0 and 600")

    @property
    def paced(self) -> bool:
        return self.terminating_s > 0 or self.creating_s > 0


# The three steps of one node's replacement, called by the worker in order.
Step = Callable[[str], bool]  # returns False to stop this node's rollout early


class RolloutWorker:
    """Runs node replacements one after another on a daemon thread."""

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
        self.rolling: set[str] = set()
        self._lock = threading.Lock()

    def submit(self, node: str) -> bool:
        """Queue a node's replacement; False if it is already queued or rolling."""
        with self._lock:
            if node in self.rolling:
                return False
            self.rolling.add(node)
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="sim-rollout", daemon=True)
                self._thread.start()
        self._queue.put(node)
        return True

    def is_rolling(self, node: str) -> bool:
        with self._lock:
            return node in self.rolling

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            node = self._queue.get()
            if node is None:
                return
            try:
                if (
                    self._terminate(node)
                    and not self._stop.wait(self.pace.terminating_s)
                    and self._create(node)
                ):
                    self._stop.wait(self.pace.creating_s)
            except Exception:  # one node's failure must not stop the others
                log.exception("simulated rollout on %s failed", node)
            finally:
                with self._lock:
                    self.rolling.discard(node)
            if not self._stop.is_set():
                try:
                    self._start(node)
                except Exception:
                    log.exception("simulated rollout on %s failed to finish", node)
