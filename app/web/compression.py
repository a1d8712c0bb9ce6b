"""ETag / 304 and gzip for every page, fragment and JSON body, as plain ASGI middleware.

Every 200 answer to a GET or HEAD whose body arrives in one piece (all of ours: they are
memoised per snapshot, app.web.services.snapshots.service) gets a weak ETag, the same for
the gzip and the plain form; a request whose `If-None-Match` names it is answered 304 with
no body, so a page polling a fragment that did not change receives a few hundred bytes of
headers. A client that accepts gzip gets the body compressed when it is worth it.

Both cost little per request: memoised bodies are the same `bytes` object for every
request of a snapshot, so their tag and compressed form are kept by object (a few
entries, bounded in bytes); bodies assembled per request (a page around its memoised
fragment) are hashed (~1 GB/s) and their compressed form is kept by tag. Compressing a
big body runs in a worker thread (zlib releases the GIL), not on the event loop.
Streaming answers (static files, which carry their own ETag) pass through untouched.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MIN_GZIP_BYTES = 1024
THREAD_GZIP_BYTES = 256 * 1024  # compress bigger bodies off the event loop
CACHE_ENTRIES = 64
CACHE_BYTES = 64 * 1024 * 1024
COMPRESSIBLE = ("text/", "application/json", "application/javascript", "image/svg+xml")


@dataclass(frozen=True)
class Tagged:
    body: bytes  # kept so the id() key cannot be reused while the entry lives
    etag: str
    gzipped: bytes | None = None


class _Cache:
    """A small LRU of tagged bodies, by object id and by tag, bounded in entries and bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: OrderedDict[int, Tagged] = OrderedDict()
        self._gzip_by_tag: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def tagged(self, body: bytes) -> Tagged:
        with self._lock:
            entry = self._by_id.get(id(body))
            if entry is not None and entry.body is body:
                self._by_id.move_to_end(id(body))
                return entry
        digest = hashlib.blake2b(body, digest_size=12).hexdigest()
        entry = Tagged(body, f'W/"{digest}"')
        with self._lock:
            self._by_id[id(body)] = entry
            self._bytes += len(body)
            self._trim()
        return entry

    def gzipped(self, etag: str) -> bytes | None:
        with self._lock:
            found = self._gzip_by_tag.get(etag)
            if found is not None:
                self._gzip_by_tag.move_to_end(etag)
            return found

    def keep_gzipped(self, etag: str, compressed: bytes) -> None:
        with self._lock:
            if etag not in self._gzip_by_tag:
                self._gzip_by_tag[etag] = compressed
                self._bytes += len(compressed)
                self._trim()

    def _trim(self) -> None:
        while self._by_id and (len(self._by_id) > CACHE_ENTRIES or self._bytes > CACHE_BYTES):
            _, old = self._by_id.popitem(last=False)
            self._bytes -= len(old.body)
        while self._gzip_by_tag and (
            len(self._gzip_by_tag) > CACHE_ENTRIES or self._bytes > CACHE_BYTES
        ):
            _, old_gzip = self._gzip_by_tag.popitem(last=False)
            self._bytes -= len(old_gzip)


def compress(body: bytes) -> bytes:
    """gzip with a level that stays fast for the megabytes of a big page."""
    level = 6 if len(body) < 1024 * 1024 else 1
    return gzip.compress(body, compresslevel=level, mtime=0)


def matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 weak comparison of `If-None-Match` against our tag."""
    if if_none_match.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in if_none_match.split(","))


def accepts_gzip(accept_encoding: str) -> bool:
    for part in accept_encoding.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


class CompressAndTag:
    """The middleware (see the module notes)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.cache = _Cache()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        request_headers = Headers(scope=scope)
        if_none_match = request_headers.get("if-none-match")
        want_gzip = accepts_gzip(request_headers.get("accept-encoding", ""))
        start: Message | None = None
        passing = False

        async def wrapped_send(message: Message) -> None:
            nonlocal start, passing
            if passing:
                await send(message)
                return
            if message["type"] == "http.response.start":
                start = message
                return
            assert start is not None
            headers = Headers(raw=start["headers"])
            if (
                start["status"] != 200
                or message.get("more_body", False)
                or "content-encoding" in headers
                or "etag" in headers
            ):
                passing = True
                await send(start)
                await send(message)
                return
            await self._answer(start, message.get("body", b""), send, if_none_match, want_gzip)

        await self.app(scope, receive, wrapped_send)

    async def _answer(
        self,
        start: Message,
        body: bytes,
        send: Send,
        if_none_match: str | None,
        want_gzip: bool,
    ) -> None:
        headers = MutableHeaders(scope=start)
        entry = self.cache.tagged(body)
        headers["ETag"] = entry.etag
        headers.setdefault("Cache-Control", "no-cache")
        compressible = headers.get("content-type", "").startswith(COMPRESSIBLE)
        if compressible:
            headers.add_vary_header("Accept-Encoding")
        if if_none_match is not None and matches(if_none_match, entry.etag):
            del headers["Content-Length"]
            if "content-type" in headers:
                del headers["Content-Type"]
            await send({**start, "status": 304})
            await send({"type": "http.response.body", "body": b""})
            return
        if want_gzip and compressible and len(body) >= MIN_GZIP_BYTES:
            compressed = self.cache.gzipped(entry.etag)
            if compressed is None:
                if len(body) >= THREAD_GZIP_BYTES:
                    compressed = await run_in_threadpool(compress, body)
                else:
                    compressed = compress(body)
                self.cache.keep_gzipped(entry.etag, compressed)
            body = compressed
            headers["Content-Encoding"] = "gzip"
            headers["Content-Length"] = str(len(body))
        await send(start)
        await send({"type": "http.response.body", "body": body})
