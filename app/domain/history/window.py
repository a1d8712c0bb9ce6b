"""The window a history question asks about, and why one is refused (codes, worded by the web
layer): `from` not before `to`, `from` older than the retention, an unknown grouping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from app.domain.history.showback import SHOWBACK_BY, ShowbackBy


@dataclass(frozen=True)
class WindowRefusal:
    code: str  # history.from-after-to | history.over-retention | history.unknown-by | ...
    params: dict[str, str | int]


def window_refusal(
    start: datetime, end: datetime, by: str, *, now: datetime, retention_days: int
) -> WindowRefusal | None:
    """Why a showback window cannot be answered, or None when it can."""
    if by not in SHOWBACK_BY:
        return WindowRefusal("history.unknown-by", {"by": by, "known": ", ".join(SHOWBACK_BY)})
    if start.tzinfo is None or end.tzinfo is None:
        return WindowRefusal("history.time-without-zone", {})
    if start >= end:
        return WindowRefusal(
            "history.from-after-to", {"from": start.isoformat(), "to": end.isoformat()}
        )
    if start < now - timedelta(days=retention_days):
        return WindowRefusal(
            "history.over-retention", {"from": start.isoformat(), "days": retention_days}
        )
    return None


def as_by(by: str) -> ShowbackBy:
    """`by` once window_refusal accepted it."""
    for known in SHOWBACK_BY:
        if known == by:
            return known
    raise ValueError(by)
