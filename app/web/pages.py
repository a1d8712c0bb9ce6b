"""HTML pages and their htmx fragments, rendered from the current snapshot only.

A page is its fragment wrapped in the layout; the fragment is what htmx polls. Both come
from the same partial template, rendered once per snapshot and language (`snapshots.memo`),
so a page view or a poll costs the cluster nothing and the engine no extra work.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape

from app.domain.snapshot import Finding, GpuState, NodeState, Severity, Snapshot
from app.domain.usage.findings import duration_text
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
from app.web.finding_text import finding_explanation, finding_summary, finding_title
from app.web.i18n import CATALOGS, LANG_COOKIE, Translator, language_of, supported
from app.web.node_window import parse_page, slot_bar, window
from app.web.runtime import Runtime
from app.web.usage_api import usage_of

router = APIRouter(include_in_schema=False)
open_router = APIRouter(include_in_schema=False)  # routes that disclose nothing

DEFAULT_REFRESH_S = 5.0
MIN_REFRESH_S = 0.2
MAX_REFRESH_S = 300.0
LANG_COOKIE_MAX_AGE_S = 365 * 24 * 3600
HTML = "text/html; charset=utf-8"


# ---------------------------------------------------------------- view helpers


SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def most_severe(findings: Iterable[Finding], *, limit: int | None = None) -> list[Finding]:
    """Findings, errors first, then warnings, then info; stable within a severity."""
    ordered = sorted(findings, key=lambda finding: SEVERITY_RANK[finding.severity])
    return ordered if limit is None else ordered[:limit]


def seconds(value_s: float | None) -> str:
    """A duration for people: whole seconds, or one decimal under ten seconds."""
    if value_s is None:
        return "?"
    return f"{value_s:.1f}".rstrip("0").rstrip(".") if value_s < 10 else str(round(value_s))


def gib(mib: int | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f}"


@dataclass(frozen=True)
class SlotCell:
    """One slot of a GPU as drawn: who holds it, if anyone."""

    kind: str  # held | inferred | free | over | unknown
    pod: str | None


def slot_cells(gpu: GpuState) -> list[SlotCell]:
    """One cell per slot; cells held past the GPU's slots are drawn as over capacity."""
    held: list[SlotCell] = []
    for holder in gpu.holders:
        kind = "held" if holder.assigned else "inferred"
        held.extend(SlotCell(kind, holder.pod) for _ in range(max(holder.slots, 0)))
    while len(held) < gpu.held_slots:
        held.append(SlotCell("unknown", None))
    cells = [
        cell if index < gpu.slots else SlotCell("over", cell.pod) for index, cell in enumerate(held)
    ]
    cells.extend(SlotCell("free", None) for _ in range(gpu.slots - len(cells)))
    return cells


SLOT_LABELS = {
    "held": "slot_held_by",
    "unknown": "slot_held_by",
    "inferred": "slot_inferred",
    "over": "slot_over",
}


def slot_grid(gpu: GpuState, t: Translator, unavailable: int = 0) -> Markup:
    """The `<li>` cells of a GPU's slot grid; the hot loop of big pages, so built here.

    Every value written into the markup goes through `escape` (pod names are cluster data),
    exactly as the autoescaping template would do it.
    """
    free = (
        '<li class="slot free" data-testid="slot-cell" data-held="false" '
        f'title="{escape(t("slot_free"))}"></li>'
    )
    cells = []
    drawn = slot_cells(gpu)
    free_cells = sum(1 for cell in drawn if cell.kind == "free")
    off = (
        '<li class="slot unavailable" data-testid="slot-cell" data-held="false" '
        f'data-unavailable="true" title="{escape(t("slot_unavailable"))}">'
        f'<span class="vh">{escape(t("slot_unavailable"))}</span></li>'
    )
    for cell in drawn:
        if cell.kind == "free":
            cells.append(off if free_cells <= unavailable else free)
            free_cells -= 1
            continue
        label = escape(t(SLOT_LABELS[cell.kind], pod=cell.pod or "?"))
        cells.append(
            f'<li class="slot {escape(cell.kind)}" data-testid="slot-cell" data-held="true" '
            f'title="{label}"><span class="vh">{label}</span></li>'
        )
    return Markup("".join(cells))


@dataclass(frozen=True)
class MemorySplit:
    """A GPU's memory as bar segments (percent widths summing to 100) and GiB figures."""

    pods_pct: int
    host_pct: int
    other_pct: int
    free_pct: int
    pods_gib: str
    host_gib: str
    free_gib: str
    total_gib: str


def memory_split(gpu: GpuState) -> MemorySplit | None:
    """The memory bar of a GPU; None when the agent could not read its memory."""
    total = gpu.memory_total_mib
    if not total or total <= 0:
        return None
    pods = max(gpu.memory_pods_mib, 0)
    host = max(gpu.memory_host_mib, 0)
    used = max(gpu.memory_used_mib or 0, pods + host)
    other = used - pods - host
    free = max(total - used, 0)

    def pct(part: int) -> int:
        return min(100, part * 100 // total)

    pods_pct, host_pct, other_pct = pct(pods), pct(host), pct(other)
    free_pct = max(0, 100 - pods_pct - host_pct - other_pct)
    return MemorySplit(
        pods_pct, host_pct, other_pct, free_pct, gib(pods), gib(host), gib(free), gib(total)
    )


def severity_of(gpu: GpuState) -> str:
    return gpu.worst_severity.value if gpu.worst_severity is not None else "none"


def gpu_groups(node: NodeState) -> list[tuple[str, list[GpuState]]]:
    """The node's GPUs by role, advertised first; empty groups left out."""
    groups = [
        (role, [gpu for gpu in node.gpus if gpu.role == role])
        for role in ("advertised", "failing", "host", "unknown")
    ]
    return [(role, gpus) for role, gpus in groups if gpus]


def unplaced_pods(node: NodeState) -> list[str]:
    """Pods holding slots of the node that no GPU's holders name (assignment not known yet)."""
    placed = {holder.pod for gpu in node.gpus for holder in gpu.holders}
    return [pod.pod for pod in node.pods if pod.slots > 0 and pod.pod not in placed]


def where(finding: Finding) -> str:
    """The node/GPU/pod a finding is about, in one line."""
    parts = [part for part in (finding.node, finding.gpu_uuid, finding.pod) if part]
    return " · ".join(parts)


def finding_key(finding: Finding) -> str:
    """A stable element id for a finding, so an open or closed row survives a refresh."""
    subject = "|".join(
        (finding.code, finding.node or "", finding.gpu_uuid or "", finding.pod or "")
    )
    return "finding-" + hashlib.sha1(subject.encode(), usedforsecurity=False).hexdigest()[:12]


views = SimpleNamespace(
    worst_finding=page_views.worst_finding,
    plugin_state=page_views.plugin_state,
    plugin_ok=page_views.plugin_ok,
    gpu_severity=page_views.gpu_severity,
    unavailable_slots=page_views.unavailable_slots,
    title=finding_title,
    explanation=finding_explanation,
    summary=finding_summary,
    mib=page_views.mib,
    duration=duration_text,
    spark_svg=page_views.spark_svg,
    age=lambda value_s: "?" if value_s is None else str(round(value_s)),
    finding_key=finding_key,
    most_severe=most_severe,
    seconds=seconds,
    gib=gib,
    slot_cells=slot_cells,
    slot_grid=slot_grid,
    memory_split=memory_split,
    severity_of=severity_of,
    gpu_groups=gpu_groups,
    where=where,
    unplaced_pods=unplaced_pods,
    slot_bar=slot_bar,
)


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
        pod_gpus: dict[str, list[int]] = {}
        for gpu in node.gpus if node else []:
            line = page_views.spark(history.series(gpu.uuid))
            if line is not None:
                sparks[gpu.uuid] = line
            for holder in gpu.holders:
                pod_gpus.setdefault(holder.pod, []).append(gpu.index)
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
        body = Markup(_render(runtime, "partials/doc.html", {"t": t, "doc": doc}))
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
