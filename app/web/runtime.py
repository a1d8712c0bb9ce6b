"""What one running dashboard holds: settings, cache, report store, snapshot service, templates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from fastapi.templating import Jinja2Templates

from app.settings import Settings
from app.web.reports import ReportStore
from app.web.snapshots import ClusterSource, SnapshotService


class StartStop(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


class RunningSource(ClusterSource, StartStop, Protocol):
    """A cluster cache the app starts in its lifespan and stops on shutdown."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def default_assets_dir() -> Path:
    """The repository root (static/, templates/, docs/) when running from a checkout."""
    return Path(__file__).resolve().parents[2]


@dataclass
class Runtime:
    settings: Settings
    source: RunningSource
    reports: ReportStore
    snapshots: SnapshotService
    templates: Jinja2Templates
    assets_dir: Path
    clock: Callable[[], datetime] = utc_now
    extras: dict[str, Any] = field(default_factory=dict)
