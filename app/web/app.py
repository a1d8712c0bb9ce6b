"""The FastAPI app factory: everything is built here, nothing at import time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.types import Scope

import app as package
from app.clock import utc_now
from app.domain.cluster import AccountingOptions
from app.i18n.coded import coded_markup
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
from app.web.http.body_limits import BodyLimits
from app.web.http.errors import add_error_handlers
from app.web.http.headers import SecurityHeaders
from app.web.http.mode_render import refused_form
from app.web.http.openapi import add_docs, add_report_schema
from app.web.http.problems import add_problem_handlers
from app.web.routes import (
    agent_api,
    api,
    changes_api,
    changes_pages,
    fit,
    login_pages,
    mode_api,
    mode_pages,
    ops,
    pages,
    peers,
    rollout_api,
    rollout_pages,
    showback_api,
    split_api,
    split_pages,
    usage_api,
    usage_history_pages,
)
from app.web.runtime import RunningSource, Runtime, default_assets_dir
from app.web.services.changes.pipeline import ChangeContext
from app.web.services.fragments import Pages
from app.web.services.history.service import build_history
from app.web.services.reports.intake import ReportIntake
from app.web.services.reports.node_roster import NodeRoster
from app.web.services.reports.store import ReportStore
from app.web.services.reports.sync import ReportSync
from app.web.services.snapshots.builder import Clock
from app.web.services.snapshots.service import SnapshotService
from app.web.views import diffs, times


def accounting_options(settings: Settings) -> AccountingOptions:
    return AccountingOptions(
        plugin=settings.plugin_target,
        plugin_configmap_name=settings.plugin_configmap_name,
        serving_resource=settings.serving_gpu_resource,
        agent_stale_after_s=settings.agent_stale_after_s,
        memory_pressure_pct=settings.memory_pressure_pct,
        config_namespaces=tuple(settings.plugin_config_namespaces),
    )


def page_templates(assets_dir: Path) -> Jinja2Templates:
    """The one autoescaping environment, with the diff helpers the admin preview uses."""
    templates = Jinja2Templates(directory=str(assets_dir / "templates"))
    # The templates ship with the package: no stat of the file on every render (a GIL
    # hand-off each, while a build runs)
    templates.env.auto_reload = False
    templates.env.filters["diff_lines"] = diffs.diff_lines
    templates.env.filters["changed_count"] = diffs.changed_count
    templates.env.filters["coded"] = coded_markup  # a domain code, worded (i18n/coded.py)
    templates.env.filters["when"] = times.when  # a moment as a <time> (views/times.py)
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
    runtime = build_runtime(
        settings,
        source=source,
        clock=clock,
        refresh_interval_s=refresh_interval_s,
        writer=writer,
        token_reviewer=token_reviewer,
        page_refresh_s=page_refresh_s,
    )
    app = FastAPI(
        title="GPU Slots",
        openapi_url=None,
        version=package.__version__,
        summary="GPU slot accounting next to what the GPUs really do",
        docs_url=None,
        redoc_url=None,
        lifespan=_lifespan(runtime),
    )
    app.state.runtime = runtime
    app.mount("/static", StaticFiles(directory=str(runtime.assets_dir / "static")), name="static")
    reader = Depends(require_reader)
    _include_routers(app, reader)
    _add_exception_handlers(app)
    add_docs(app, reader)
    app.add_middleware(CompressAndTag)
    app.add_middleware(SecurityHeaders)
    # the outermost: bodies bounded before any work (issue 33)
    app.add_middleware(BodyLimits, signed_in=_signed_in(runtime.auth))
    add_report_schema(app, reader)
    return app


def _signed_in(auth: AuthState) -> Callable[[Scope], bool]:
    """Whether a request carries a credential the app accepts (headers and cookie only)."""

    def signed_in(scope: Scope) -> bool:
        try:
            return auth.identify(Request(scope), for_write=False) is not None
        except AuthRefused:
            return False

    return signed_in


def build_runtime(
    settings: Settings,
    *,
    source: RunningSource,
    clock: Clock,
    refresh_interval_s: float,
    writer: PluginWriter | None,
    token_reviewer: TokenReviewer | None,
    page_refresh_s: float | None,
) -> Runtime:
    """Everything the app holds: the report store, the snapshot service, auth, templates."""
    assets_dir = settings.assets_dir or default_assets_dir()
    roster = NodeRoster()  # written by the snapshot builder, read by the report store
    reports = ReportStore(
        roster=roster,
        max_unknown=settings.max_unknown_nodes,
        stale_after_s=settings.agent_stale_after_s,
    )
    snapshots = SnapshotService(
        source,
        reports,
        options=accounting_options(settings),
        clock=clock,
        roster=roster,
        min_interval_s=settings.snapshot_min_interval_s,
        refresh_interval_s=refresh_interval_s,
        idle_after_s=settings.idle_slot_after_s,
        low_after_s=settings.low_utilization_after_s,
    )
    report_sync = ReportSync(
        settings,
        reports,
        snapshot_ready=lambda: snapshots.current() is not None,
        on_copied=snapshots.poke,
    )
    templates = page_templates(assets_dir)
    return Runtime(
        settings=settings,
        source=source,
        reports=reports,
        snapshots=snapshots,
        templates=templates,
        pages=Pages(templates.env, snapshots),
        changes=ChangeContext(settings, source, snapshots, clock=clock, writer=writer),
        assets_dir=assets_dir,
        auth=AuthState(settings),
        agents=AgentAuth(settings, reviewer=token_reviewer),
        peers=report_sync,
        intake=ReportIntake(
            reports,
            max_bytes=settings.max_report_bytes,
            clock=clock,
            on_stored=snapshots.poke,
        ),
        history=build_history(settings, snapshots.current, source, clock=clock),
        clock=clock,
        writer=writer,
        page_refresh_s=page_refresh_s,
    )


def _lifespan(runtime: Runtime) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start the cache, the snapshot service and the report sync; stop them in reverse."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        runtime.source.start()
        runtime.snapshots.start()
        runtime.peers.start()
        runtime.history.sampler.start()
        try:
            yield
        finally:
            runtime.history.sampler.stop()
            runtime.peers.stop()
            runtime.snapshots.stop()
            runtime.source.stop()

    return lifespan


def _include_routers(app: FastAPI, reader: Any) -> None:
    """Every route is guarded here, per router, never per handler (tests/web/test_guards.py
    walks every route): reads follow GEO_MLOPS_PUBLIC_READS, writes need an admin."""
    page_reader, admin_writes = Depends(require_page_reader), Depends(require_admin_writes)
    admin_form = Depends(require_admin_form)
    app.router.routes.insert(0, agent_api.plain_route)  # the agents' POSTs, matched first
    app.include_router(ops.router)  # /healthz and /readyz: always open (probes)
    app.include_router(ops.metrics_router, dependencies=[Depends(require_metrics)])
    app.include_router(api.router, dependencies=[reader])
    app.include_router(fit.api_router, dependencies=[reader])  # a read: it writes nothing
    app.include_router(usage_api.router, dependencies=[reader])
    app.include_router(showback_api.router, dependencies=[reader])
    app.include_router(rollout_api.router, dependencies=[reader])
    app.include_router(agent_api.router)  # agents authenticate themselves (app.web.auth.agent_auth)
    app.include_router(peers.router)  # replicas authenticate each other (app.web.routes.peers)
    app.include_router(pages.router, dependencies=[page_reader])
    app.include_router(pages.open_router)  # the language switch (never discloses a page)
    # the changes, by resource (mode, split, changes, rollout): an API and a pages router each
    app.include_router(mode_api.router, dependencies=[reader, admin_writes])
    app.include_router(split_api.router, dependencies=[reader])
    app.include_router(split_api.write_router, dependencies=[reader, admin_writes])
    app.include_router(changes_api.router, dependencies=[reader, admin_writes])
    app.include_router(login_pages.router)  # the login form is open by nature
    app.include_router(mode_pages.router, dependencies=[page_reader, admin_form])
    app.include_router(rollout_pages.router, dependencies=[page_reader, admin_form])
    app.include_router(split_pages.router, dependencies=[page_reader, admin_form])
    app.include_router(changes_pages.router, dependencies=[page_reader, admin_form])
    app.include_router(fit.page_router, dependencies=[page_reader])
    app.include_router(usage_history_pages.router, dependencies=[page_reader])


def _add_exception_handlers(app: FastAPI) -> None:
    """Refused form writes as the translated form; our errors and bad requests as JSON."""
    app.add_exception_handler(AuthRefused, refused_form)
    add_problem_handlers(app)
    add_error_handlers(app)
    add_guard_handlers(app)
