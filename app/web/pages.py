"""HTML pages and their htmx fragments, rendered from the current snapshot only.

A page is its fragment wrapped in the layout; the fragment is what htmx polls. Both come
from the same partial template, rendered once per snapshot and language (`snapshots.memo`),
so a page view or a poll costs the cluster nothing and the engine no extra work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape

from app.domain.snapshot import Finding, GpuState, NodeState, Severity, Snapshot
from app.web import docs_page
from app.web.deps import RuntimeDep
from app.web.dra_views import claim_lines, dra_grid, dra_held, node_dra_devices
from app.web.i18n import CATALOGS, LANG_COOKIE, Translator, language_of, supported
from app.web.runtime import Runtime

router = APIRouter(include_in_schema=False)

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
        if holder.source == "dra":
            continue  # a DRA claim holds a device, drawn by dra_views.dra_grid
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


def slot_grid(gpu: GpuState, t: Translator) -> Markup:
    """The `<li>` cells of a GPU's slot grid; the hot loop of big pages, so built here.

    Every value written into the markup goes through `escape` (pod names are cluster data),
    exactly as the autoescaping template would do it.
    """
    free = (
        '<li class="slot free" data-testid="slot-cell" data-held="false" '
        f'title="{escape(t("slot_free"))}"></li>'
    )
    cells = []
    for cell in slot_cells(gpu):
        if cell.kind == "free":
            cells.append(free)
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
        for role in ("advertised", "dra", "host", "unknown")
    ]
    return [(role, gpus) for role, gpus in groups if gpus]


def unplaced_pods(node: NodeState) -> list[str]:
    """Pods holding slots of the node that no GPU's holders name (assignment not known yet)."""
    placed = {holder.pod for gpu in node.gpus for holder in gpu.holders if holder.source != "dra"}
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
    dra_grid=dra_grid,
    dra_held=dra_held,
    claim_lines=claim_lines,
    node_dra_devices=node_dra_devices,
)


def refresh_interval_s(runtime: Runtime, requested_s: float | None) -> float:
    """The polling interval: `?refresh_s=` within bounds, else the runtime's, else 5 s."""
    if requested_s is not None:
        return min(max(requested_s, MIN_REFRESH_S), MAX_REFRESH_S)
    configured = runtime.extras.get("page_refresh_s")
    if isinstance(configured, int | float) and configured > 0:
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
) -> Markup:
    """The partial `template` over the current snapshot, rendered once per snapshot+language."""
    t = Translator(lang)

    def render(snapshot: Snapshot) -> Markup:
        context: dict[str, Any] = {"snapshot": snapshot, "t": t, "lang": lang, "v": views}
        if extra is not None:
            context.update(extra(snapshot))
        # The partial went through the autoescaping environment; mark it so the layout
        # does not escape it a second time.
        return Markup(_render(runtime, template, context))

    body = runtime.snapshots.memo(f"page:{key}:{lang}", render)
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
        "live_url": f"{live_url}?lang={lang}" if live_url else None,
        "refresh_ms": round(interval_s * 1000),
        "refresh_s": seconds(interval_s),
        "path": request.url.path,
    }
    html = _render(runtime, f"pages/{page}.html", context)
    response = HTMLResponse(html, status_code=status_code, media_type=HTML)
    response.headers["Vary"] = "Accept-Language, Cookie"
    response.headers["Cache-Control"] = "no-store"
    return response


def _fragment_response(body: Markup) -> HTMLResponse:
    response = HTMLResponse(str(body), media_type=HTML)
    response.headers["Vary"] = "Accept-Language, Cookie"
    response.headers["Cache-Control"] = "no-store"
    return response


# ---------------------------------------------------------------- overview


def overview_fragment(runtime: Runtime, lang: str) -> Markup:
    return _fragment(
        runtime,
        lang,
        key="overview",
        template="partials/overview.html",
        extra=lambda s: {"top_findings": most_severe(s.findings, limit=5)},
    )


@router.get("/", response_class=HTMLResponse)
async def overview(
    request: Request, runtime: RuntimeDep, refresh_s: float | None = Query(None)
) -> HTMLResponse:
    lang = language_of(request)
    return _page(
        request,
        runtime,
        page="overview",
        title=Translator(lang)("title_overview"),
        body=overview_fragment(runtime, lang),
        live_url="/fragments/overview",
        refresh_s=refresh_s,
    )


@router.get("/fragments/overview", response_class=HTMLResponse)
async def overview_live(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _fragment_response(overview_fragment(runtime, language_of(request)))


# ---------------------------------------------------------------- node detail


def find_node(snapshot: Snapshot, name: str) -> NodeState | None:
    return next((node for node in snapshot.nodes if node.name == name), None)


def node_fragment(runtime: Runtime, lang: str, name: str) -> Markup:
    def extra(snapshot: Snapshot) -> dict[str, Any]:
        node = find_node(snapshot, name)
        findings: list[Finding] = most_severe(node.findings) if node else []
        return {"node": node, "name": name, "node_findings": findings}

    return _fragment(
        runtime, lang, key=f"node:{name}", template="partials/node_detail.html", extra=extra
    )


@router.get("/nodes/{name}", response_class=HTMLResponse)
async def node_detail(
    name: str, request: Request, runtime: RuntimeDep, refresh_s: float | None = Query(None)
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
async def node_detail_live(name: str, request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _fragment_response(node_fragment(runtime, language_of(request), name))


# ---------------------------------------------------------------- findings


def findings_fragment(runtime: Runtime, lang: str) -> Markup:
    return _fragment(
        runtime,
        lang,
        key="findings",
        template="partials/findings.html",
        extra=lambda s: {"all_findings": most_severe(s.findings)},
    )


@router.get("/findings", response_class=HTMLResponse)
async def findings(
    request: Request, runtime: RuntimeDep, refresh_s: float | None = Query(None)
) -> HTMLResponse:
    lang = language_of(request)
    return _page(
        request,
        runtime,
        page="findings",
        title=Translator(lang)("title_findings"),
        body=findings_fragment(runtime, lang),
        live_url="/fragments/findings",
        refresh_s=refresh_s,
    )


@router.get("/fragments/findings", response_class=HTMLResponse)
async def findings_live(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return _fragment_response(findings_fragment(runtime, language_of(request)))


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


@router.get("/lang/{code}")
async def choose_lang(code: str, next: str | None = Query(None)) -> Response:
    """Remember the chosen language in a cookie and go back where the user was."""
    response = RedirectResponse(safe_next(next), status_code=303)
    lang = supported(code)
    if lang is not None:
        response.set_cookie(
            LANG_COOKIE, lang, max_age=LANG_COOKIE_MAX_AGE_S, samesite="lax", httponly=True
        )
    return response
