"""The wall clock everything outside the pure domain reads: now, aware, in UTC.

The domain reads no clock (an import contract): it is handed `now`. Components take a
`clock` callable defaulting to `utc_now`, so tests can set the time.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
