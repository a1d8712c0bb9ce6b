"""Request bodies bounded before any work: before parsing, and before authentication reads them.

FastAPI reads and parses a body before the route's dependencies run, so a 48 MB anonymous
body on a write route was parsed (+142-160 MB) before its 401. This plain ASGI middleware
runs first: every body is limited to MAX_BODY_BYTES, and a write from a caller with no
credential to MAX_ANONYMOUS_BODY_BYTES (a login form or a refused request fit easily). Agent
reports are left to their route, which authenticates the agent before it reads at most
GEO_MLOPS_MAX_REPORT_BYTES. A declared Content-Length past the limit is answered at once,
unread; a streamed body is counted as it arrives and the answer replaced once it passes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 1024 * 1024  # an admin form or change is a few KiB
MAX_ANONYMOUS_BODY_BYTES = 16 * 1024  # the login form; anything an anonymous caller may send
AGENT_REPORTS = "/api/v1/agent/reports"  # its route: the agent's auth, then the report limit
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_OPEN_WRITES = frozenset({"/login"})  # anonymous by nature: too large is 413, not 401
# Questions sent as POST that write nothing (the fit check): reads, guarded as reads by their
# routes, so a caller without a credential is not refused here; bounded like any write.
READ_POSTS = frozenset({"/api/v1/fit", "/fit"})


class _Refusal:
    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail


class BodyLimits:
    """Limits request bodies (see the module notes); `signed_in(scope)` says whether the
    caller sent any credential the app accepts (a cheap header and cookie check)."""

    def __init__(self, app: ASGIApp, *, signed_in: Callable[[Scope], bool]) -> None:
        self.app = app
        self._signed_in = signed_in

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _WRITES or _agents(scope):
            await self.app(scope, receive, send)
            return
        refusal = self._refusal_for(scope)
        limit, refused = refusal
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _answer(send, refused)
            return
        await self._counted(scope, receive, send, limit, refused)

    def _refusal_for(self, scope: Scope) -> tuple[int, _Refusal]:
        path = scope["path"]
        if path in READ_POSTS:
            return MAX_BODY_BYTES, _Refusal(
                413, f"Request body larger than {MAX_BODY_BYTES} bytes."
            )
        if path in _OPEN_WRITES or not self._signed_in(scope):
            limit = MAX_ANONYMOUS_BODY_BYTES
            if path in _OPEN_WRITES:
                return limit, _Refusal(413, f"Request body larger than {limit} bytes.")
            return limit, _Refusal(401, "Sign in first: no credential came with this write.")
        return MAX_BODY_BYTES, _Refusal(413, f"Request body larger than {MAX_BODY_BYTES} bytes.")

    async def _counted(
        self, scope: Scope, receive: Receive, send: Send, limit: int, refused: _Refusal
    ) -> None:
        """Run the app with the body counted; past `limit` its answer is replaced."""
        state = {"read": 0, "over": False, "answered": False}

        async def counting_receive() -> Message:
            if state["over"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["read"] += len(message.get("body", b""))
                if state["read"] > limit:
                    state["over"] = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not state["over"]:
                await send(message)
                return
            if not state["answered"]:
                state["answered"] = True
                await _answer(send, refused)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not state["over"]:
                raise
        if state["over"] and not state["answered"]:
            await _answer(send, refused)


def _agents(scope: Scope) -> bool:
    return bool(scope["path"] == AGENT_REPORTS)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() and len(text) < 19 else None
    return None


async def _answer(send: Send, refusal: _Refusal) -> None:
    body = json.dumps({"detail": refusal.detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
