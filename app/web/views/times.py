"""Times as people read them: a `<time>` element, never a raw ISO string on a page.

The server writes the exact moment in UTC to the minute (and to the second on hover, no
microseconds); static/js/times.js rewrites it in the viewer's time zone and the page's
language ("3 min ago", the exact local time on hover), so no page carries a clock read.
"""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup

from app.domain.kube_time import parse_time


def when(value: datetime | str | None) -> Markup | str:
    """`value` (an aware datetime or an RFC 3339 string) as a `<time>` element; "" when
    it is missing, and the text itself (escaped) when it is no time at all."""
    moment = parse_time(value) if value else None
    if moment is None:
        return "" if not value else str(value)
    utc = moment.astimezone(UTC).replace(microsecond=0)
    return Markup('<time datetime="{}" title="{}" data-when>{}</time>').format(
        utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        utc.strftime("%Y-%m-%d %H:%M:%S UTC"),
        utc.strftime("%Y-%m-%d %H:%M UTC"),
    )
