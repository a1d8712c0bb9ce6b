"""Running the real dashboard over real HTTP in a test: uvicorn in a thread on a free port."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import uvicorn
from fastapi import FastAPI

from app.web.server import uvicorn_config

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | None],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.02,
    what: str = "",
) -> T:
    """Poll `probe` until it returns something truthy, or fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what or probe}: last={last!r}")


def stop_together(*stops: Callable[[], None]) -> None:
    """Run each stop in its own thread and wait for all: a dashboard and its simulator each
    take a tick of uvicorn's loop (~0.15 s) to stop, and tests start hundreds of them."""
    threads = [threading.Thread(target=stop, name="stop") for stop in stops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class LiveServer:
    """A FastAPI app served by uvicorn in a background thread (lifespan included)."""

    def __init__(self, app: FastAPI, *, port: int = 0, host: str = "127.0.0.1") -> None:
        # The production settings (no forwarded-header rewriting), with the lifespan on.
        config = uvicorn_config(app, host=host, port=port)
        config.lifespan = "on"
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-server", daemon=True)
        self.url = ""

    def start(self) -> str:
        self.thread.start()
        wait_for(lambda: self.server.started, what="uvicorn to start")
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{self.server.config.host}:{port}"
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
