"""HTML pages and their htmx fragments, rendered from the current snapshot only.

A page is its fragment wrapped in the layout; the fragment is what htmx polls. Both come
from the same partial template, rendered once per snapshot and language (`snapshots.memo`),
so a page view or a poll costs the cluster nothing and the engine no extra work.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from app.domain.findings.catalogue import CATALOGUE
from app.domain.snapshot import SEVERITY_RANK, Finding, NodeState, Snapshot
from app.domain.usage.holders import UsageBy
from app.web import docs_page, page_views
from app.web.auth import get_auth
from app.web.deps import RuntimeDep
from app.web.filters import (
    FilterError,
    FindingFilter,
    NodeFilter,
    choices,
    filter_findings,
    filter_nodes,
    parse_finding_filter,
    parse_node_filter,
)
from app.web.finding_text import finding_explanation, finding_summary
from app.web.i18n import CATALOGS, LANG_COOKIE, Translator, language_of, supported
from app.web.node_window import parse_page, window
from app.web.runtime import Runtime
from app.web.usage_api import usage_of
from app.web.views import most_severe, seconds, views
from app.web.views import pod_gpus as view_pod_gpus

router = APIRouter(include_in_schema=False)
open_router = APIRouter(include_in_schema=False)  # routes that disclose nothing

DEFAULT_REFRESH_S = 5.0
MIN_REFRESH_S = 0.2
MAX_REFRESH_S = 300.0
LANG_COOKIE_MAX_AGE_S = 365 * 24 * 3600
HTML = "text/html; charset=utf-8"


def refresh_interval_s(runtime: Runtime, requested_s: float | None) -> float:
    """The polling interval: `?refresh_s=` within bounds, else the runtime's, else 5 s."""
    if requested_s is not None and math.isfinite(requested_s):
        return min(max(requested_s, MIN_REFRESH_S), MAX_REFRESH_S)
    configured = runtime.page_refresh_s
    if configured is not None and configured > 0:
        return float(configured)
    return DEFAULT_REFRESH_S


def _render(runtime: Runtime, template: str, context: dict[str, Any]) -> str:
    return runtime.templates.get_template(template).render(context)


def _fragment(
    runtime: Runtime,
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
        return Markup(_render(runtime, template, context))

    if memo:
        body = runtime.snapshots.memo(f"page:{key}:{lang}", render)
    else:
        current = runtime.snapshots.current()
        body = render(current) if current is not None else None
    if body is None:
        return Markup(_render(runtime, "partials/listing.html", {"t": t, "lang": lang}))
    return body


def _page(
    request: Request,
    runtime: Runtime,
    *,
    page: str,
    title: str,
    body: Markup,
    live_url: str | None,
    refresh_s: float | None,
    status_code: int = 200,
) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    interval_s = refresh_interval_s(runtime, refresh_s)
    context = {
        "t": t,
        "lang": lang,
        "languages": list(CATALOGS),
        "title": title,
        "body": body,
        "live_url": (
            f"{live_url}{'&' if '?' in live_url else '?'}lang={lang}" if live_url else None
        ),
        "signed_in": _signed_in(request),
        "refresh_ms": round(interval_s * 1000),
        "refresh_s": seconds(interval_s),
        "path": request.url.path,
    }
    html = _render(runtime, f"pages/{page}.html", context)
    response = HTMLResponse(html, status_code=status_code, media_type=HTML)
    response.headers["Vary"] = "Accept-Language, Cookie"
    response.headers["Cache-Control"] = "private, no-cache"
    return response


def _signed_in(request: Request) -> str | None:
    """The signed-in user's name for the header, or None."""
    principal = get_auth(request).identify(request, for_write=False)
    return principal.user if principal is not None else None


def _fragment_response(body: Markup) -> HTMLResponse:
    response = HTMLResponse(str(body), media_type=HTML)
    response.headers["Vary"] = "Accept-Language, Cookie"
    response.headers["Cache-Control"] = "private, no-cache"
    return response


# ---------------------------------------------------------------- overview

# A finite number (nan or inf would reach the page's timer); clamped to the bounds.
RefreshS = Annotated[float | None, Query(allow_inf_nan=False)]
NodeName = Annotated[str, Path(max_length=253)]


def _filter_error(request: Request, runtime: RuntimeDep, error: FilterError) -> HTMLResponse:
    """A bad filter value: say which and what is accepted (400); nothing else changes."""
    lang = language_of(request)
    t = Translator(lang)
    body = Markup(
        _render(runtime, "partials/filter_error.html", {"t": t, "lang": lang, "error": str(error)})
    )
    return _page(
        request,
        runtime,
        page="doc",
        title=t("title_bad_filter"),
        body=body,
        live_url=None,
        refresh_s=None,
        status_code=400,
    )


def _overview_extra(spec: NodeFilter, page: int = 1) -> Callable[[Snapshot], dict[str, Any]]:
    def extra(snapshot: Snapshot) -> dict[str, Any]:
        gpu_nodes = [node for node in snapshot.nodes if node.gpu_node]
        shown = window(filter_nodes(gpu_nodes, spec), page)
        return {
            "top_findings": most_severe(snapshot.findings, limit=5),
            "nodes": shown.nodes,
            "window": shown,
            "node_filter": spec,
            "filter_choices": choices(gpu_nodes),
        }

    return extra


def overview_fragment(
    runtime: Runtime, lang: str, spec: NodeFilter | None = None, page: int = 1
) -> Markup:
    """The overview; unfiltered pages are memoised per snapshot (page 1 as `overview`)."""
    spec = spec or NodeFilter()
    return _fragment(
        runtime,
        lang,
        key="overview" if page == 1 else f"overview:p{page}",
        template="partials/overview.html",
        extra=_overview_extra(spec, page),
        memo=not spec.active and page <= MEMO_PAGES,
    )


MEMO_PAGES = 50  # unfiltered overview pages memoised per snapshot; further ones render per request


def _with_page(query: str, page: int) -> str:
    return query if page == 1 else "&".join(part for part in (query, f"page={page}") if part)


def _live(path: str, query: str) -> str:
    return f"{path}?{query}" if query else path


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, runtime: RuntimeDep, refresh_s: RefreshS = None) -> HTMLResponse:
    lang = language_of(request)
    try:
        spec = parse_node_filter(request.query_params)
        page = parse_page(request.query_params)
    except FilterError as error:
        return _filter_error(request, runtime, error)
    return _page(
        request,
        runtime,
        page="overview",
        title=Translator(lang)("title_overview"),
        body=overview_fragment(runtime, lang, spec, page),
        live_url=_live("/fragments/overview", _with_page(spec.query(), page)),
        refresh_s=refresh_s,
    )


@router.get("/fragments/overview", response_class=HTMLResponse)
def overview_live(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    try:
        spec = parse_node_filter(request.query_params)
        page = parse_page(request.query_params)
    except FilterError:
        spec, page = NodeFilter(), 1
    return _fragment_response(overview_fragment(runtime, language_of(request), spec, page))


# ---------------------------------------------------------------- node detail


def find_node(snapshot: Snapshot, name: str) -> NodeState | None:
    return next((node for node in snapshot.nodes if node.name == name), None)


def node_fragment(runtime: Runtime, lang: str, name: str) -> Markup:
    history = runtime.snapshots.usage

    def extra(snapshot: Snapshot) -> dict[str, Any]:
        node = find_node(snapshot, name)
        findings: list[Finding] = most_severe(node.findings) if node else []
        sparks = {}
        for gpu in node.gpus if node else []:
            line = page_views.spark(history.series(gpu.uuid))
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
        runtime, lang, key=f"node:{name}", template="partials/node_detail.html", extra=extra
    )


@router.get("/nodes/{name}", response_class=HTMLResponse)
async def node_detail(
    name: NodeName, request: Request, runtime: RuntimeDep, refresh_s: RefreshS = None
) -> HTMLResponse:
    lang = language_of(request)
    snapshot = runtime.snapshots.current()
    missing = snapshot is not None and find_node(snapshot, name) is None
    return _page(
        request,
        runtime,
        page="node",
        title=Translator(lang)("title_node", name=name),
        body=node_fragment(runtime, lang, name),
        live_url=f"/fragments/nodes/{name}",
        refresh_s=refresh_s,
        status_code=404 if missing else 200,
    )


@router.get("/fragments/nodes/{name}", response_class=HTMLResponse)
async def node_detail_live(name: NodeName, request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _fragment_response(node_fragment(runtime, language_of(request), name))


# ---------------------------------------------------------------- findings


def findings_fragment(runtime: Runtime, lang: str, spec: FindingFilter | None = None) -> Markup:
    spec = spec or FindingFilter()

    def extra(snapshot: Snapshot) -> dict[str, Any]:
        gpu_nodes = [node for node in snapshot.nodes if node.gpu_node]
        offered = choices(gpu_nodes)
        offered["codes"] = sorted({item.code for item in snapshot.findings})
        return {
            "all_findings": most_severe(filter_findings(snapshot.findings, spec)),
            "finding_filter": spec,
            "filter_choices": offered,
        }

    return _fragment(
        runtime,
        lang,
        key="findings",
        template="partials/findings.html",
        extra=extra,
        memo=not spec.active,
    )


@router.get("/findings", response_class=HTMLResponse)
def findings(request: Request, runtime: RuntimeDep, refresh_s: RefreshS = None) -> HTMLResponse:
    lang = language_of(request)
    try:
        spec = parse_finding_filter(request.query_params)
    except FilterError as error:
        return _filter_error(request, runtime, error)
    return _page(
        request,
        runtime,
        page="findings",
        title=Translator(lang)("title_findings"),
        body=findings_fragment(runtime, lang, spec),
        live_url=_live("/fragments/findings", spec.query()),
        refresh_s=refresh_s,
    )


@router.get("/fragments/findings", response_class=HTMLResponse)
def findings_live(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    try:
        spec = parse_finding_filter(request.query_params)
    except FilterError:
        spec = FindingFilter()
    return _fragment_response(findings_fragment(runtime, language_of(request), spec))


# ---------------------------------------------------------------- usage


UsageByQuery = Annotated[UsageBy, Query()]


def usage_fragment(runtime: Runtime, lang: str, by: UsageBy) -> Markup:
    return _fragment(
        runtime,
        lang,
        key=f"usage:{by}",
        template="partials/usage.html",
        extra=lambda s: {"usage": usage_of(runtime, s, by)},
    )


@router.get("/usage", response_class=HTMLResponse)
def usage(
    request: Request,
    runtime: RuntimeDep,
    by: UsageByQuery = "namespace",
    refresh_s: RefreshS = None,
) -> HTMLResponse:
    lang = language_of(request)
    return _page(
        request,
        runtime,
        page="usage",
        title=Translator(lang)("title_usage"),
        body=usage_fragment(runtime, lang, by),
        live_url=f"/fragments/usage?by={by}",
        refresh_s=refresh_s,
    )


@router.get("/fragments/usage", response_class=HTMLResponse)
def usage_live(
    request: Request, runtime: RuntimeDep, by: UsageByQuery = "namespace"
) -> HTMLResponse:
    return _fragment_response(usage_fragment(runtime, language_of(request), by))


# ---------------------------------------------------------------- docs and language


@router.get("/docs/findings", response_class=HTMLResponse)
async def findings_reference(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    doc = docs_page.findings_html(runtime.assets_dir)
    if doc is None:
        body = Markup(_render(runtime, "partials/doc_missing.html", {"t": t}))
        title, status_code = t("title_not_found"), 404
    else:
        contents = [
            SimpleNamespace(
                code=code,
                severity=kind.severity.value,
                scope=kind.scope.value,
                summary=finding_summary(code, lang),
                explanation=finding_explanation(code, lang) or "",
            )
            for code, kind in sorted(
                CATALOGUE.items(), key=lambda item: (SEVERITY_RANK[item[1].severity], item[0])
            )
        ]
        context = {
            "t": t,
            "lang": lang,
            "doc": doc,
            "contents": contents,
            "sections": contents if lang != "en" else [],  # English: docs/findings.md itself
        }
        body = Markup(_render(runtime, "partials/doc_findings.html", context))
        title, status_code = t("title_doc_findings"), 200
    return _page(
        request,
        runtime,
        page="doc",
        title=title,
        body=body,
        live_url=None,
        refresh_s=None,
        status_code=status_code,
    )


def safe_next(target: str | None) -> str:
    """A same-site path to go back to; anything else becomes `/`."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@open_router.get("/lang/{code}")
async def choose_lang(
    request: Request,
    code: Annotated[str, Path(max_length=16)],
    next: Annotated[str | None, Query(max_length=2000)] = None,
) -> Response:
    """Remember the chosen language in a cookie and go back where the user was.

    Without a login while reads are not public, it goes back to the login form only.
    """
    target = safe_next(next)
    auth = get_auth(request)
    if not auth.settings.public_reads and auth.identify(request, for_write=False) is None:
        target = "/login"
    response = RedirectResponse(target, status_code=303)
    lang = supported(code)
    if lang is not None:
        response.set_cookie(
            LANG_COOKIE, lang, max_age=LANG_COOKIE_MAX_AGE_S, samesite="lax", httponly=True
        )
    return response
