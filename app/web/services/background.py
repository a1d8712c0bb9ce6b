"""One background thread a service starts with the app's lifespan and stops on shutdown.

Neutral ground for the services of every flow (the history's sampler, the reports' sync
with peers): it knows nothing of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

JOIN_S = 5.0  # how long `stop` waits for the thread to end


class BackgroundLoop:
    """`run()` on a daemon thread named `name`; `run` ends once `stopping` is set.

    Started again after a stop (an app's lifespan may repeat).
    """

    def __init__(self, name: str, run: Callable[[], None]) -> None:
        self.name = name
        self.stopping = threading.Event()
        self._run = run
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=JOIN_S)
