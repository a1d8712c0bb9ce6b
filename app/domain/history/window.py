"""The window a history question asks about, and why one is refused (codes, worded by the web
layer): `from` not before `to`, `from` older than the retention, an unknown grouping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from app.domain.history.showback import SHOWBACK_BY, ShowbackBy

MINUTE_S = 60
HOUR_S = 3600


@dataclass(frozen=True)
class Ages:
    """How long samples stay as they are, and minutes before they become hours."""

    raw_s: float = 2 * MINUTE_S  # a minute's samples become one row once it is over
    minutes_s: float = 2 * 24 * HOUR_S


AGES = Ages()


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


@dataclass(frozen=True)
class Cutoffs:
    """Rows older than these (epoch seconds, bucket-aligned) are rolled up or dropped."""

    to_minutes: float
    to_hours: float
    drop: float


def cutoffs(now_s: float, *, retention_days: int, ages: Ages = AGES) -> Cutoffs:
    """Raw rows before `to_minutes` become minutes, minutes before `to_hours` hours, rows
    before `drop` go; each aligned to its bucket, so a bucket is only ever rolled up whole."""
    return Cutoffs(
        to_minutes=(now_s - ages.raw_s) // MINUTE_S * MINUTE_S,
        to_hours=(now_s - ages.minutes_s) // HOUR_S * HOUR_S,
        drop=now_s - retention_days * 24 * 3600,
    )
