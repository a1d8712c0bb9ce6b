"""The shape of this app's plain ASGI middleware: HTTP requests go to `http`, the rest pass.

(Starlette's `@app.middleware("http")` costs a task group and a stream per request; a
plain middleware costs a closure.)
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """Passes every scope but HTTP through untouched; subclasses handle HTTP in `http`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request (the default passes it through)."""
        await self.app(scope, receive, send)
