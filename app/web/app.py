"""The FastAPI app factory: everything is built here, nothing at import time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import app as package
from app.domain.cluster import AccountingOptions
from app.domain.report import AgentReport
from app.kube.writer import PluginWriter
from app.settings import Settings
from app.web.auth.agent_auth import AgentAuth, TokenReviewer
from app.web.auth.guards import (
    add_guard_handlers,
    require_admin_form,
    require_admin_writes,
    require_metrics,
    require_page_reader,
    require_reader,
)
from app.web.auth.principal import AuthRefused
from app.web.auth.state import AuthState
from app.web.compression import CompressAndTag
from app.web.http.errors import add_error_handlers
from app.web.http.problems import add_problem_handlers
from app.web.routes import (
    admin_api,
    admin_gpus,
    admin_pages,
    agent_api,
    api,
    history_pages,
    ops,
    pages,
    peers,
    rollout_api,
    split_api,
    usage_api,
)
from app.web.runtime import RunningSource, Runtime, default_assets_dir, utc_now
from app.web.services.report_sync import ReportSync
from app.web.services.reports import ReportStore
from app.web.services.snapshot_builder import Clock
from app.web.services.snapshots import SnapshotService
from app.web.views import page_views
from app.web.views.schemas import ProblemOut

SWAGGER = "/static/vendor/swagger-ui-5.35.0"
PAGE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
# Swagger UI starts from an inline script; only its page gets that allowance.
DOCS_CSP = PAGE_CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'").replace(
    "style-src 'self'", "style-src 'self' 'unsafe-inline'"
)


def accounting_options(settings: Settings) -> AccountingOptions:
    return AccountingOptions(
        plugin_name=settings.kubernetes_device_plugin_name,
        plugin_namespace=settings.kubernetes_device_plugin_namespace,
        plugin_configmap_name=settings.plugin_configmap_name,
        serving_resource=settings.serving_gpu_resource,
        agent_stale_after_s=settings.agent_stale_after_s,
        memory_pressure_pct=settings.memory_pressure_pct,
        config_namespaces=tuple(settings.plugin_config_namespaces),
    )


def _templates(assets_dir: Path) -> Jinja2Templates:
    """The one autoescaping environment, with the diff helpers the admin preview uses."""
    templates = Jinja2Templates(directory=str(assets_dir / "templates"))
    templates.env.filters["diff_lines"] = page_views.diff_lines
    templates.env.filters["changed_count"] = page_views.changed_count
    return templates


def create_app(
    settings: Settings,
    *,
    source: RunningSource,
    clock: Clock = utc_now,
    refresh_interval_s: float = 5.0,
    writer: PluginWriter | None = None,
    token_reviewer: TokenReviewer | None = None,
    page_refresh_s: float | None = None,
) -> FastAPI:
    """The dashboard over `source` (a started-on-lifespan cluster cache).

    `writer` enables plugin changes; `token_reviewer` lets agents authenticate with
    projected ServiceAccount tokens (TokenReview).
    """
    assets_dir = settings.assets_dir or default_assets_dir()
    reports = ReportStore(
        max_unknown=settings.max_unknown_nodes, stale_after_s=settings.agent_stale_after_s
    )
    snapshots = SnapshotService(
        source,
        reports,
        options=accounting_options(settings),
        clock=clock,
        min_interval_s=settings.snapshot_min_interval_s,
        refresh_interval_s=refresh_interval_s,
        idle_after_s=settings.idle_slot_after_s,
        low_after_s=settings.low_utilization_after_s,
    )
    reports.is_known = snapshots.has_node
    report_sync = ReportSync(
        settings,
        reports,
        snapshot_ready=lambda: snapshots.current() is not None,
        on_copied=snapshots.poke,
    )
    runtime = Runtime(
        settings=settings,
        source=source,
        reports=reports,
        snapshots=snapshots,
        templates=_templates(assets_dir),
        assets_dir=assets_dir,
        auth=AuthState(settings),
        agents=AgentAuth(settings, reviewer=token_reviewer),
        peers=report_sync,
        clock=clock,
        writer=writer,
        page_refresh_s=page_refresh_s,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        source.start()
        snapshots.start()
        report_sync.start()
        try:
            yield
        finally:
            report_sync.stop()
            snapshots.stop()
            source.stop()

    app = FastAPI(
        title="GPU Slots",
        openapi_url=None,
        version=package.__version__,
        summary="GPU slot accounting next to what the GPUs really do",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.mount("/static", StaticFiles(directory=str(assets_dir / "static")), name="static")
    # Every route is guarded here, per router, never per handler (tests/web/test_guards.py
    # walks every route): reads follow GEO_MLOPS_PUBLIC_READS, writes need an admin.
    reader, page_reader = Depends(require_reader), Depends(require_page_reader)
    app.include_router(ops.router)  # /healthz and /readyz: always open (probes)
    app.include_router(ops.metrics_router, dependencies=[Depends(require_metrics)])
    app.include_router(api.router, dependencies=[reader])
    app.include_router(usage_api.router, dependencies=[reader])
    app.include_router(rollout_api.router, dependencies=[reader])
    app.include_router(agent_api.router)  # agents authenticate themselves (app.web.auth.agent_auth)
    app.include_router(peers.router)  # replicas authenticate each other (app.web.routes.peers)
    app.include_router(pages.router, dependencies=[page_reader])
    app.include_router(pages.open_router)  # the language switch (never discloses a page)
    app.include_router(admin_api.router, dependencies=[reader, Depends(require_admin_writes)])
    app.include_router(split_api.router, dependencies=[reader])
    app.include_router(split_api.write_router, dependencies=[reader, Depends(require_admin_writes)])
    app.include_router(admin_pages.login_router)  # the login form is open by nature
    app.include_router(
        admin_pages.router,
        dependencies=[page_reader, Depends(require_admin_form)],
    )
    app.add_exception_handler(AuthRefused, admin_pages.refused_form)
    app.include_router(
        admin_gpus.router,
        dependencies=[page_reader, Depends(require_admin_form)],
    )
    app.include_router(history_pages.router, dependencies=[page_reader])
    add_problem_handlers(app)
    add_error_handlers(app)
    add_guard_handlers(app)
    _add_docs(app, reader)
    app.add_middleware(CompressAndTag)
    app.add_middleware(SecurityHeaders)
    _add_report_schema(app, reader)
    return app


def _add_docs(app: FastAPI, reader: Any) -> None:
    @app.get("/docs", include_in_schema=False, dependencies=[reader])
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="GPU Slots API",
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
        )


class SecurityHeaders:
    """Adds the security headers to every HTTP response, as plain ASGI middleware.

    (Starlette's `@app.middleware("http")` costs a task group and a stream per request;
    this costs a closure.)
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = DOCS_CSP if scope["path"] == "/docs" else PAGE_CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in (
                    ("Content-Security-Policy", csp),
                    ("X-Content-Type-Options", "nosniff"),
                    ("X-Frame-Options", "DENY"),
                    ("Referrer-Policy", "same-origin"),
                ):
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _add_report_schema(app: FastAPI, reader: Any) -> None:
    """Publish AgentReport (the endpoint reads the raw body) and our 422 body shape.

    /openapi.json is served by a route of ours so that it sits behind the reader guard.
    """
    default_openapi = app.openapi

    @app.get("/openapi.json", include_in_schema=False, dependencies=[reader])
    async def openapi_json() -> JSONResponse:
        return JSONResponse(app.openapi())

    def openapi() -> dict[str, object]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = default_openapi()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        report_schema = AgentReport.model_json_schema(
            by_alias=True, ref_template="#/components/schemas/{model}"
        )
        for name, definition in report_schema.pop("$defs", {}).items():
            components[name] = definition
        components["AgentReport"] = report_schema
        components.setdefault("ProblemOut", ProblemOut.model_json_schema())
        problem = {"application/json": {"schema": {"$ref": "#/components/schemas/ProblemOut"}}}
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                invalid = operation.get("responses", {}).get("422")
                if invalid is not None:
                    invalid["content"] = problem
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
