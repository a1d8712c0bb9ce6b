"""What one running dashboard holds: settings, cache, reports, snapshots, auth, templates.

Typed fields only: what a route needs is named here, built by `create_app`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from fastapi.templating import Jinja2Templates

from app.clock import utc_now
from app.domain.fit.placement import CandidateMemo
from app.kube.writer import PluginWriter
from app.settings import Settings
from app.web.auth.agent_auth import AgentAuth
from app.web.auth.state import AuthState
from app.web.services.changes.pipeline import ChangeContext
from app.web.services.fragments import Pages
from app.web.services.history.service import HistoryService
from app.web.services.reports.intake import ReportIntake
from app.web.services.reports.store import ReportStore
from app.web.services.reports.sync import ReportSync
from app.web.services.snapshots.builder import ClusterSource
from app.web.services.snapshots.service import SnapshotService


class StartStop(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


class RunningSource(ClusterSource, StartStop, Protocol):
    """A cluster cache the app starts in its lifespan and stops on shutdown."""


def default_assets_dir() -> Path:
    """The page assets the package carries: templates/, static/ and docs/findings.md.

    They are package data (app/web/assets/), so a checkout and an installed wheel serve the
    same files from any working directory.
    """
    return Path(__file__).resolve().parent / "assets"


@dataclass
class Runtime:
    settings: Settings
    source: RunningSource
    reports: ReportStore
    snapshots: SnapshotService
    templates: Jinja2Templates
    pages: Pages  # the page fragments' renderer (over templates.env)
    changes: ChangeContext  # what the admin change services use
    assets_dir: Path
    auth: AuthState
    agents: AgentAuth
    peers: ReportSync
    intake: ReportIntake
    history: HistoryService  # GPU-hours over days (off unless a file or Prometheus is set)
    clock: Callable[[], datetime] = utc_now
    writer: PluginWriter | None = None  # None: plugin changes are not enabled
    page_refresh_s: float | None = None  # the pages' polling interval, when not the default
    fit_memo: CandidateMemo = field(default_factory=CandidateMemo)  # the fit check's (issue 45)
