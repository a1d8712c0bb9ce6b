"""Page fragments: a partial template over the current snapshot, rendered once per snapshot.

A page is its fragment wrapped in the layout; the fragment is what htmx polls. Both come
from the same partial template, rendered once per snapshot and language (the snapshot
service's page cache), so a page view or a poll costs the cluster nothing and the engine
no extra work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from app.domain.snapshot import Finding, NodeState, Snapshot
from app.domain.usage.holders import UsageBy
from app.i18n.translate import Translator
from app.web.services.snapshots.service import SnapshotService
from app.web.services.usage import usage_of
from app.web.views.filters import (
    FindingFilter,
    NodeFilter,
    choices,
    filter_findings,
    filter_nodes,
)
from app.web.views.finding_groups import roots
from app.web.views.node_window import window
from app.web.views.page_view import COMPACT_FINDINGS_ABOVE, COMPACT_NODES_ABOVE, View, is_compact
from app.web.views.sparks import spark
from app.web.views.views import most_severe, views
from app.web.views.views import pod_gpus as view_pod_gpus

MEMO_PAGES = 50  # unfiltered overview pages memoised per snapshot; further ones render per request


@dataclass(frozen=True)
class Pages:
    """What pages are rendered from: the one autoescaping environment and the snapshots."""

    env: Environment
    snapshots: SnapshotService

    def render(self, template: str, context: dict[str, Any]) -> str:
        return self.env.get_template(template).render(context)


def _fragment(
    pages: Pages,
    lang: str,
    *,
    key: str,
    template: str,
    extra: Callable[[Snapshot], dict[str, Any]] | None = None,
    memo: bool = True,
) -> Markup:
    """The partial `template` over the current snapshot, rendered once per snapshot+language.

    A filtered view (`memo=False`) renders for this request only: its keys are as many as
    the filters people type, so they are not kept nor rendered ahead.
    """
    t = Translator(lang)

    def render(snapshot: Snapshot) -> Markup:
        context: dict[str, Any] = {"snapshot": snapshot, "t": t, "lang": lang, "v": views}
        if extra is not None:
            context.update(extra(snapshot))
        # The partial went through the autoescaping environment; mark it so the layout
        # does not escape it a second time.
        return Markup(pages.render(template, context))

    if memo:
        body = pages.snapshots.page_html.memo(f"page:{key}:{lang}", render)
    else:
        current = pages.snapshots.current()
        body = render(current) if current is not None else None
    if body is None:
        return Markup(pages.render("partials/listing.html", {"t": t, "lang": lang}))
    return body


def _overview_extra(
    pages: Pages, spec: NodeFilter, page: int = 1, view: View = ""
) -> Callable[[Snapshot], dict[str, Any]]:
    def extra(snapshot: Snapshot) -> dict[str, Any]:
        gpu_nodes = [node for node in snapshot.nodes if node.gpu_node]
        shown = window(filter_nodes(gpu_nodes, spec), page)
        return {
            "free_models": pages.snapshots.free_gpus(snapshot),
            "top_findings": most_severe(roots(snapshot.findings), limit=5),
            "nodes": shown.nodes,
            "window": shown,
            "view": view,
            "compact": is_compact(view, shown.total, above=COMPACT_NODES_ABOVE),
            "view_query": _view_links(spec.query(), page),
            "node_filter": spec,
            "filter_choices": choices(gpu_nodes),
        }

    return extra


def _view_links(query: str, page: int = 1) -> str:
    """The query a view switch links with: the page's filter (and page), no view."""
    return "&".join(part for part in (query, f"page={page}" if page > 1 else "") if part)


def overview_fragment(
    pages: Pages, lang: str, spec: NodeFilter | None = None, page: int = 1, view: View = ""
) -> Markup:
    """The overview; unfiltered pages are memoised per snapshot and view (page 1 as
    `overview`)."""
    spec = spec or NodeFilter()
    return _fragment(
        pages,
        lang,
        key=("overview" if page == 1 else f"overview:p{page}") + f":{view}",
        template="partials/overview.html",
        extra=_overview_extra(pages, spec, page, view),
        memo=not spec.active and page <= MEMO_PAGES,
    )


def find_node(snapshot: Snapshot, name: str) -> NodeState | None:
    return next((node for node in snapshot.nodes if node.name == name), None)


def node_fragment(pages: Pages, lang: str, name: str) -> Markup:
    history = pages.snapshots.usage

    def extra(snapshot: Snapshot) -> dict[str, Any]:
        node = find_node(snapshot, name)
        findings: list[Finding] = most_severe(node.findings) if node else []
        sparks = {}
        for gpu in node.gpus if node else []:
            line = spark(history.series(gpu.uuid))
            if line is not None:
                sparks[gpu.uuid] = line
        pod_gpus = view_pod_gpus(node) if node else {}
        return {
            "node": node,
            "name": name,
            "node_findings": findings,
            "sparks": sparks,
            "pod_gpus": pod_gpus,
        }

    return _fragment(
        pages, lang, key=f"node:{name}", template="partials/node_detail.html", extra=extra
    )


def findings_fragment(
    pages: Pages, lang: str, spec: FindingFilter | None = None, view: View = ""
) -> Markup:
    spec = spec or FindingFilter()

    def extra(snapshot: Snapshot) -> dict[str, Any]:
        gpu_nodes = [node for node in snapshot.nodes if node.gpu_node]
        offered = choices(gpu_nodes)
        offered["codes"] = sorted({item.code for item in snapshot.findings})
        shown = most_severe(filter_findings(snapshot.findings, spec))
        return {
            "all_findings": shown,
            "finding_filter": spec,
            "filter_choices": offered,
            "view": view,
            "compact": is_compact(view, len(shown), above=COMPACT_FINDINGS_ABOVE),
            "view_query": _view_links(spec.query()),
        }

    return _fragment(
        pages,
        lang,
        key=f"findings:{view}",
        template="partials/findings.html",
        extra=extra,
        memo=not spec.active,
    )


def usage_fragment(pages: Pages, lang: str, by: UsageBy) -> Markup:
    return _fragment(
        pages,
        lang,
        key=f"usage:{by}",
        template="partials/usage.html",
        extra=lambda s: {"usage": usage_of(s, by)},
    )
