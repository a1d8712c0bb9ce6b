"""Failed admin logins per client address, in a sliding window."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

LOGIN_FAILURES_ALLOWED = 5
LOGIN_WINDOW_S = 60.0
_MAX_TRACKED_CLIENTS = 10_000


@dataclass
class LoginLimiter:
    """Failed logins per client address in a sliding window."""

    allowed: int = LOGIN_FAILURES_ALLOWED
    window_s: float = LOGIN_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def retry_after_s(self, client: str) -> int | None:
        """Seconds until `client` may try again, or None when it may now."""
        now = self.clock()
        failures = self._prune(client, now)
        if len(failures) < self.allowed:
            return None
        return max(1, int(failures[0] + self.window_s - now + 0.999))

    def fail(self, client: str) -> None:
        now = self.clock()
        if len(self._failures) >= _MAX_TRACKED_CLIENTS:
            for key in list(self._failures):
                self._prune(key, now)
            while len(self._failures) >= _MAX_TRACKED_CLIENTS:
                self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(client, deque()).append(now)

    def succeed(self, client: str) -> None:
        self._failures.pop(client, None)

    def _prune(self, client: str, now: float) -> deque[float]:
        failures = self._failures.get(client, deque())
        while failures and failures[0] <= now - self.window_s:
            failures.popleft()
        if not failures:
            self._failures.pop(client, None)
        return failures
