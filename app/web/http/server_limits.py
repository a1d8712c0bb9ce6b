"""HTTP limits in the server itself, before the app sees a request (issue 33).

- Request heads are bounded: uvicorn's httptools protocol has no limit of its own (one 8 MB
  header got 200; twenty unfinished 4 MB heads held 95 MB). `LimitedHttpTools` counts the
  bytes of a request line and headers as they arrive and answers 431 (closing the connection)
  past MAX_HEAD_BYTES or MAX_HEADERS, before the head is complete.
- An error does not drop a kept-alive connection: Starlette sends the 500 and re-raises, and
  uvicorn then closes the connection of a response it already sent. `KeepAliveOnError` logs
  such an exception once the response is complete and keeps the connection.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.web.http.asgi import HttpMiddleware

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024  # request line and headers; browsers send a few KiB
MAX_HEADERS = 100


class _HeadTooLarge(Exception):
    """The head of a request passed one of the limits (raised from a parser callback)."""


class LimitedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with bounded request heads (431, connection closed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > MAX_HEADERS:
            raise _HeadTooLarge(f"more than {MAX_HEADERS} headers")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        if self._in_head and self._head_bytes + len(data) > MAX_HEAD_BYTES:
            # Feed only what still fits: a head that completes within it is served.
            room = max(MAX_HEAD_BYTES - self._head_bytes, 0)
            if not self._feed(data[:room]):
                return
            if self._in_head:
                self._refuse(f"request head larger than {MAX_HEAD_BYTES} bytes")
                return
            self._feed(data[room:])
            return
        if self._feed(data) and self._in_head:
            self._head_bytes += len(data)

    def _feed(self, data: bytes) -> bool:
        """Feed the parser as uvicorn does; False once the connection is answered and closed."""
        if self.parser is not None and data:
            super().data_received(data)
        return self.parser is not None and not self.transport.is_closing()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parser error; 431 when the error is the header count."""
        if self._header_count > MAX_HEADERS:
            self._refuse(f"more than {MAX_HEADERS} headers")
            return
        super().send_400_response(msg)

    def _refuse(self, why: str) -> None:
        if self.transport.is_closing():
            return
        log.warning("request refused: %s", why, extra={"client": self.client})
        body = f"Request header fields too large: {why}.".encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + body
        )
        self.transport.close()


class KeepAliveOnError(HttpMiddleware):
    """Keeps the connection of a request whose app raised after its response was complete."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        completed = False

        async def tracking_send(message: Message) -> None:
            nonlocal completed
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                completed = True

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            if not completed:
                raise
            log.exception("error after the response was sent", extra={"path": scope["path"]})
