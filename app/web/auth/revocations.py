"""Ended admin sessions, kept in a file so a logout survives a restart.

A session cookie stays valid until it expires; logging out must therefore remember the
session id at least that long. The ids live in a small JSON file
(`GEO_MLOPS_SESSION_REVOCATIONS_FILE`; the chart puts it on a volume), re-read when another
replica changed it and pruned of expired entries on every write. Without a file they are
kept in memory only (and a warning says so).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

MAX_REVOKED = 100_000


class RevokedSessions:
    """Session ids that were logged out, each until the moment its cookie would expire."""

    def __init__(self, path: Path | None, *, clock: Callable[[], float] = time.time) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._until: dict[str, float] = {}
        self._mtime_ns: int | None = None
        if path is None:
            log.warning(
                "GEO_MLOPS_SESSION_REVOCATIONS_FILE is not set: a logout is forgotten when "
                "the dashboard restarts (the session cookie then works again until it expires)"
            )
        self._reload()

    def revoke(self, session_id: str, *, until: float) -> None:
        with self._lock:
            self._reload_locked()
            self._until[session_id] = until
            self._prune_locked()
            self._save_locked()

    def __contains__(self, session_id: object) -> bool:
        with self._lock:
            self._reload_locked()
            until = self._until.get(str(session_id))
            return until is not None and until > self._clock()

    def _reload(self) -> None:
        with self._lock:
            self._reload_locked()

    def _reload_locked(self) -> None:
        if self._path is None:
            return
        try:
            mtime_ns = self._path.stat().st_mtime_ns
        except FileNotFoundError:
            return
        if mtime_ns == self._mtime_ns:
            return
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.error("cannot read the revoked sessions in %s: %s", self._path, exc)
            return
        self._mtime_ns = mtime_ns
        if isinstance(data, dict):
            for sid, until in data.items():
                if isinstance(sid, str) and isinstance(until, int | float):
                    self._until[sid] = max(float(until), self._until.get(sid, 0.0))

    def _prune_locked(self) -> None:
        now = self._clock()
        self._until = {sid: until for sid, until in self._until.items() if until > now}
        while len(self._until) > MAX_REVOKED:  # the soonest to expire go first
            del self._until[min(self._until, key=self._until.__getitem__)]

    def _save_locked(self) -> None:
        if self._path is None:
            return
        temporary = self._path.with_name(f".{self._path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(self._until), encoding="utf-8")
            os.replace(temporary, self._path)
            self._mtime_ns = self._path.stat().st_mtime_ns
        except OSError as exc:
            log.error("cannot keep the revoked sessions in %s: %s", self._path, exc)
