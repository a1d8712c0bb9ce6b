"""HTML pages and their htmx fragments, rendered from the current snapshot only.

A page is its fragment (app.web.services.fragments) wrapped in the layout; the fragment is
what htmx polls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from app.domain.findings.catalogue import CATALOGUE
from app.domain.snapshot import SEVERITY_RANK
from app.domain.usage.holders import UsageBy
from app.i18n.translate import Translator
from app.web.auth.requests import get_auth
from app.web.deps import RuntimeDep
from app.web.http.html import REVALIDATE, html_response, layout_context, safe_next
from app.web.http.language import LANG_COOKIE, language_of, supported
from app.web.runtime import Runtime
from app.web.services.changes.rollout_view import rollout_view
from app.web.services.fragments import (
    Pages,
    find_node,
    findings_fragment,
    node_fragment,
    overview_fragment,
    usage_fragment,
)
from app.web.views import docs_page
from app.web.views.figures import seconds
from app.web.views.filters import (
    FilterError,
    parse_finding_filter,
    parse_node_filter,
)
from app.web.views.finding_text import finding_explanation, finding_summary
from app.web.views.node_window import parse_page
from app.web.views.page_view import (
    VIEW_COOKIE_MAX_AGE_S,
    VIEW_PARAM,
    parse_view,
    remembered,
    view_cookie,
    view_query,
)

router = APIRouter(include_in_schema=False)
open_router = APIRouter(include_in_schema=False)  # routes that disclose nothing

DEFAULT_REFRESH_S = 5.0
MIN_REFRESH_S = 0.2
MAX_REFRESH_S = 300.0
LANG_COOKIE_MAX_AGE_S = 365 * 24 * 3600


def refresh_interval_s(runtime: Runtime, requested_s: float | None) -> float:
    """The polling interval: `?refresh_s=` within bounds, else the runtime's, else 5 s."""
    if requested_s is not None and math.isfinite(requested_s):
        return min(max(requested_s, MIN_REFRESH_S), MAX_REFRESH_S)
    configured = runtime.page_refresh_s
    if configured is not None and configured > 0:
        return float(configured)
    return DEFAULT_REFRESH_S


def _page(
    request: Request,
    runtime: Runtime,
    *,
    page: str,
    title: str,
    body: Markup,
    live_url: str | None = None,
    refresh_s: float | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """A page in the layout; `live_url`: the fragment it polls (None: it stays as it is)."""
    lang = language_of(request)
    interval_s = refresh_interval_s(runtime, refresh_s)
    context = {
        **layout_context(request, lang=lang, title=title),
        "body": body,
        "live_url": (
            f"{live_url}{'&' if '?' in live_url else '?'}lang={lang}" if live_url else None
        ),
        "refresh_ms": round(interval_s * 1000),
        "refresh_s": seconds(interval_s),
        # the overview never reads a config as done while its rollout is not (watch cache)
        "rollout": rollout_view(runtime.changes) if page == "overview" else None,
    }
    html = runtime.pages.render(f"pages/{page}.html", context)
    return html_response(html, status_code=status_code, cache=REVALIDATE)


def _doc_page(
    request: Request, runtime: Runtime, *, title: str, body: Markup, status_code: int
) -> HTMLResponse:
    """A page that stays as it is (a reference, a refusal): no live fragment, no polling."""
    return _page(request, runtime, page="doc", title=title, body=body, status_code=status_code)


def _fragment_response(body: Markup) -> HTMLResponse:
    return html_response(str(body), cache=REVALIDATE)


# ---------------------------------------------------------------- overview

# A finite number (nan or inf would reach the page's timer); clamped to the bounds.
RefreshS = Annotated[float | None, Query(allow_inf_nan=False)]
NodeName = Annotated[str, Path(max_length=253)]


def _filter_error(request: Request, runtime: RuntimeDep, error: FilterError) -> HTMLResponse:
    """A bad filter value: say which and what is accepted (400); nothing else changes."""
    lang = language_of(request)
    t = Translator(lang)
    body = Markup(
        runtime.pages.render(
            "partials/filter_error.html", {"t": t, "lang": lang, "error": error.worded(t)}
        )
    )
    return _doc_page(request, runtime, title=t("title_bad_filter"), body=body, status_code=400)


def _with_page(query: str, page: int) -> str:
    return query if page == 1 else "&".join(part for part in (query, f"page={page}") if part)


def _live(path: str, query: str) -> str:
    return f"{path}?{query}" if query else path


# A filtered page's view: its body and the query its live fragment polls with, from the
# request's query (FilterError on a bad value) in a language.
FilteredView = Callable[[Pages, Mapping[str, str], str], tuple[Markup, str]]


def _filtered_routes(path: str, page: str, view: FilteredView) -> None:
    """A page its query filters, at `path`, and the fragment it polls, `/fragments/<page>`.

    A bad filter value is a 400 page that says which; the fragment (polled with the page's
    own query, or a hand-edited one) shows the page unfiltered instead.
    """

    def full(request: Request, runtime: RuntimeDep, refresh_s: RefreshS = None) -> HTMLResponse:
        lang = language_of(request)
        try:
            body, live_query = view(runtime.pages, _viewed(request, page), lang)
            chosen = parse_view(request.query_params)
        except FilterError as error:
            return _filter_error(request, runtime, error)
        response = _page(
            request,
            runtime,
            page=page,
            title=Translator(lang)(f"title_{page}"),
            body=body,
            live_url=_live(f"/fragments/{page}", live_query),
            refresh_s=refresh_s,
        )
        if chosen:  # remembered: the page opens this way next time
            response.set_cookie(
                view_cookie(page),
                chosen,
                max_age=VIEW_COOKIE_MAX_AGE_S,
                samesite="lax",
                httponly=True,
            )
        return response

    def live(request: Request, runtime: RuntimeDep) -> HTMLResponse:
        lang = language_of(request)
        try:
            body, _ = view(runtime.pages, _viewed(request, page), lang)
        except FilterError:
            body, _ = view(runtime.pages, {}, lang)
        return _fragment_response(body)

    router.add_api_route(path, full, response_class=HTMLResponse, name=page)
    router.add_api_route(
        f"/fragments/{page}", live, response_class=HTMLResponse, name=f"{page}_live"
    )


def _viewed(request: Request, page: str) -> Mapping[str, str]:
    """The request's query, with the view its page's cookie keeps when the query names none."""
    params = request.query_params
    if params.get(VIEW_PARAM):
        return params
    kept = remembered(request.cookies.get(view_cookie(page)))
    return {**params, VIEW_PARAM: kept} if kept else params


def _overview_view(pages: Pages, params: Mapping[str, str], lang: str) -> tuple[Markup, str]:
    spec, page, shown = parse_node_filter(params), parse_page(params), parse_view(params)
    body = overview_fragment(pages, lang, spec, page, shown)
    return body, view_query(_with_page(spec.query(), page), shown)


_filtered_routes("/", "overview", _overview_view)


# ---------------------------------------------------------------- node detail


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
        body=node_fragment(runtime.pages, lang, name),
        live_url=f"/fragments/nodes/{name}",
        refresh_s=refresh_s,
        status_code=404 if missing else 200,
    )


@router.get("/fragments/nodes/{name}", response_class=HTMLResponse)
async def node_detail_live(name: NodeName, request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _fragment_response(node_fragment(runtime.pages, language_of(request), name))


# ---------------------------------------------------------------- findings


def _findings_view(pages: Pages, params: Mapping[str, str], lang: str) -> tuple[Markup, str]:
    spec, shown = parse_finding_filter(params), parse_view(params)
    return findings_fragment(pages, lang, spec, shown), view_query(spec.query(), shown)


_filtered_routes("/findings", "findings", _findings_view)


# ---------------------------------------------------------------- usage


UsageByQuery = Annotated[UsageBy, Query()]


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
        body=usage_fragment(runtime.pages, lang, by),
        live_url=f"/fragments/usage?by={by}",
        refresh_s=refresh_s,
    )


@router.get("/fragments/usage", response_class=HTMLResponse)
def usage_live(
    request: Request, runtime: RuntimeDep, by: UsageByQuery = "namespace"
) -> HTMLResponse:
    return _fragment_response(usage_fragment(runtime.pages, language_of(request), by))


# ---------------------------------------------------------------- docs and language


@router.get("/docs/findings", response_class=HTMLResponse)
async def findings_reference(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
    doc = docs_page.findings_html(runtime.assets_dir)
    if doc is None:
        body = Markup(runtime.pages.render("partials/doc_missing.html", {"t": t}))
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
        body = Markup(runtime.pages.render("partials/doc_findings.html", context))
        title, status_code = t("title_doc_findings"), 200
    return _doc_page(request, runtime, title=title, body=body, status_code=status_code)


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
