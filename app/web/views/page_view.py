"""Compact or full: how the overview's nodes and the findings page's findings are shown.

Compact is one line per node or finding, each opening in place (`<details>`, no script);
it is the default past a screenful (more than `COMPACT_NODES_ABOVE` nodes or
`COMPACT_FINDINGS_ABOVE` findings). A choice (`?view=compact|full`) is kept in a cookie per
page, so the page opens the same way next time. Pure: no FastAPI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from app.web.views.filters import FilterError

View = Literal["", "compact", "full"]  # "": not chosen, the default by count
VIEWS: tuple[View, ...] = ("compact", "full")
VIEW_PARAM = "view"
COMPACT_NODES_ABOVE = 8
COMPACT_FINDINGS_ABOVE = 10
VIEW_COOKIE_MAX_AGE_S = 365 * 24 * 3600


def view_cookie(page: str) -> str:
    """The cookie that keeps `page`'s chosen view."""
    return f"gpu_slots_view_{page}"


def parse_view(params: Mapping[str, str]) -> View:
    """`?view=` as a view; "" when not given; FilterError for anything else."""
    text = (params.get(VIEW_PARAM) or "").strip().lower()
    if not text:
        return ""
    for view in VIEWS:
        if text == view:
            return view
    raise FilterError("one_of", name=VIEW_PARAM, accepted=", ".join(VIEWS), value=repr(text[:20]))


def remembered(cookie: str | None) -> View:
    """The view a cookie keeps ("" for none or a value that is not one)."""
    for view in VIEWS:
        if cookie == view:
            return view
    return ""


def is_compact(view: View, count: int, *, above: int) -> bool:
    """Compact when chosen, or by default when the list is longer than `above`."""
    return view == "compact" or (view == "" and count > above)


def view_query(query: str, view: View) -> str:
    """`query` with the view added (a chosen one only)."""
    return "&".join(part for part in (query, f"{VIEW_PARAM}={view}" if view else "") if part)
