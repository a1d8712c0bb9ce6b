"""A cluster source held in memory, for web tests that need no API server."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from fastapi import FastAPI

from app.clock import utc_now
from app.domain.cluster import Manifest
from app.web.app import create_app
from app.web.runtime import Runtime
from app.web.services.snapshots.builder import Clock
from tests.conftest import runtime_of, stack_settings
from tests.domain.worlds import world


@dataclass
class FakeHealth:
    synced: bool = True
    failing_since: datetime | None = None
    last_error: str | None = None


class FakeSource:
    """Collections set by the test; `synced=False` keeps the dashboard in its starting state."""

    def __init__(self, *, synced: bool = True, **collections: list[Manifest]) -> None:
        self.collections: dict[str, list[Manifest]] = {
            "nodes": [],
            "pods": [],
            "daemonsets": [],
            "configmaps": [],
            **collections,
        }
        self.state = FakeHealth(synced=synced)
        self.generation = 0
        self._changed = threading.Condition()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def set(self, name: str, items: list[Manifest]) -> None:
        with self._changed:
            self.collections[name] = items
            self.generation += 1
            self._changed.notify_all()

    def items(self, name: str, namespace: str | None = None) -> list[Manifest]:
        return [
            item
            for item in self.collections.get(name, [])
            if namespace is None or (item.get("metadata") or {}).get("namespace") == namespace
        ]

    def health(self) -> FakeHealth:
        return self.state

    def wait_for_change(self, seen_generation: int, timeout_s: float) -> int:
        with self._changed:
            self._changed.wait_for(lambda: self.generation != seen_generation, timeout_s)
            return self.generation


def fake_source(runtime: Runtime) -> FakeSource:
    """The FakeSource a dashboard was made with (its runtime knows it as any source)."""
    source = runtime.source
    assert isinstance(source, FakeSource)
    return source


def app_with_world(
    *, clock: Clock = utc_now, refresh_interval_s: float = 5.0, **settings: object
) -> FastAPI:
    """The real app over a FakeSource holding a healthy one-node world, snapshot built."""
    state = world()
    source = FakeSource(
        nodes=list(state.nodes),
        pods=list(state.pods),
        daemonsets=[state.daemonset] if state.daemonset else [],
    )
    app = create_app(
        stack_settings(**settings),
        source=source,
        clock=clock,
        refresh_interval_s=refresh_interval_s,
    )
    runtime_of(app).snapshots.rebuild()
    return app
