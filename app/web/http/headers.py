"""The security headers every HTTP response carries (a strict CSP; Swagger UI's own)."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from app.web.http.asgi import HttpMiddleware

PAGE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
# Swagger UI starts from an inline script; only its page gets that allowance.
DOCS_CSP = PAGE_CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'").replace(
    "style-src 'self'", "style-src 'self' 'unsafe-inline'"
)


class SecurityHeaders(HttpMiddleware):
    """Adds the security headers to every HTTP response, as plain ASGI middleware."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
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
