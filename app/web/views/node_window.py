"""Which nodes of the (filtered) list one overview page shows, and how.

A small cluster keeps its node cards with every GPU's slot grid: it fits on a screen and
reads at a glance. A big one gets a compact table, one line per node with its slot bar,
`ROWS_PER_PAGE` lines a page (the GPU grids are on each node's page): the first page of
5,000 nodes is then ~100 rows of HTML instead of megabytes. Pure: no FastAPI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.domain.snapshot import NodeState
from app.web.views.filters import FilterError

CARDS_UP_TO = 24  # nodes drawn as cards (with their GPU grids) when the list is this short
ROWS_PER_PAGE = 100
MAX_PAGE = 100_000


@dataclass(frozen=True)
class NodeWindow:
    nodes: list[NodeState]  # the nodes of this page
    page: int  # 1-based; clamped to the last page
    pages: int
    total: int  # nodes the filter kept
    first: int  # 1-based position of the first node shown (0 when none)
    compact: bool  # a table of lines rather than cards

    @property
    def last(self) -> int:
        return self.first + len(self.nodes) - 1 if self.nodes else 0


def parse_page(params: Mapping[str, str]) -> int:
    """`?page=` as a number from 1; FilterError for anything else."""
    text = (params.get("page") or "").strip()
    if not text:
        return 1
    if not text.isdigit() or not 1 <= int(text) <= MAX_PAGE:
        raise FilterError("page", max=MAX_PAGE, value=repr(text[:20]))
    return int(text)


def window(nodes: Sequence[NodeState], page: int) -> NodeWindow:
    """The `page`-th page of `nodes` (already filtered and sorted)."""
    total = len(nodes)
    if total <= CARDS_UP_TO:
        return NodeWindow(list(nodes), 1, 1, total, 1 if total else 0, compact=False)
    pages = -(-total // ROWS_PER_PAGE)
    page = min(max(page, 1), pages)
    start = (page - 1) * ROWS_PER_PAGE
    shown = list(nodes[start : start + ROWS_PER_PAGE])
    return NodeWindow(shown, page, pages, total, start + 1, compact=True)


def slot_bar(node: NodeState) -> tuple[int, int]:
    """Percent widths of a node's slot bar: requested, free (of allocatable)."""
    allocatable = node.allocatable or 0
    if allocatable <= 0:
        return 0, 0
    requested = min(max(node.requested or 0, 0), allocatable)
    free = min(max(node.free or 0, 0), allocatable - requested)
    return requested * 100 // allocatable, free * 100 // allocatable
