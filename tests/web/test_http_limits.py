"""HTTP limits come before any work (issue 33), on the real server (uvicorn, httptools).

One 8 MB header got 200; twenty unfinished 4 MB heads held 95 MB; a 48 MB anonymous body on
a write route was parsed before its 401 (+142-160 MB); after an unhandled 500 the kept-alive
connection was dropped. Memory is the test process's (the server runs in it), with generous
margins for a loaded machine.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI

from app.web.http.body_limits import MAX_ANONYMOUS_BODY_BYTES, MAX_BODY_BYTES
from app.web.http.server_limits import MAX_HEAD_BYTES, MAX_HEADERS
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import LiveServer


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _exchange(url: str, head: bytes, body: bytes = b"", *, timeout_s: float = 10) -> bytes:
    """Send one raw request; what the server answered before closing or going quiet."""
    with socket.create_connection(_address(url), timeout=timeout_s) as conn:
        # the server may close before it has read everything: that is the point
        with contextlib.suppress(OSError):
            conn.sendall(head + body)
        return _read_answer(conn)


def _read_answer(conn: socket.socket) -> bytes:
    answer = b""
    while b"\r\n\r\n" not in answer or not _complete(answer):
        try:
            chunk = conn.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        answer += chunk
    return answer


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return True


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split", agents=False)


def _healthz_fast(stack: Stack) -> None:
    started = time.monotonic()
    assert stack.client.get("/healthz").status_code == 200
    assert time.monotonic() - started < 2.0  # generous: the frozen loop took 7-12 s


def test_a_header_of_8_mb_is_431(stack: Stack) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8_000_000 + b"\r\n\r\n"
    assert _status(_exchange(stack.dashboard_url, head)) == 431
    _healthz_fast(stack)


def test_more_than_max_headers_is_431_and_max_headers_is_served(stack: Stack) -> None:
    many = b"".join(b"X-H%d: v\r\n" % n for n in range(MAX_HEADERS + 1))
    refused = _exchange(
        stack.dashboard_url, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"
    )
    assert _status(refused) == 431
    fits = b"".join(b"X-H%d: v\r\n" % n for n in range(MAX_HEADERS - 1))
    served = _exchange(
        stack.dashboard_url, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + fits + b"\r\n"
    )
    assert _status(served) == 200


def test_twenty_unfinished_4_mb_heads_are_cut_off_and_memory_stays_flat(stack: Stack) -> None:
    rss = _rss_mib()
    conns = [socket.create_connection(_address(stack.dashboard_url), timeout=10) for _ in range(20)]
    try:
        for conn in conns:
            with contextlib.suppress(OSError):  # cut off at MAX_HEAD_BYTES
                conn.sendall(b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 4_000_000)
        for conn in conns:
            assert _status(_read_answer(conn)) == 431
        _healthz_fast(stack)
        assert _rss_mib() - rss < 60  # the heads held 95 MB before
    finally:
        for conn in conns:
            conn.close()
    assert MAX_HEAD_BYTES <= 64 * 1024


def test_a_48_mb_anonymous_write_is_401_unread_and_memory_stays_flat(stack: Stack) -> None:
    rss = _rss_mib()
    head = (
        b"PUT /api/v1/plugin/config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 48000000\r\n\r\n"
    )
    answer = _exchange(stack.dashboard_url, head, b'{"mode": "' + b"a" * 1_000_000)
    assert _status(answer) == 401
    chunked = b"PUT /api/v1/plugin/config HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    piece = b"%x\r\n" % 1_000_000 + b"a" * 1_000_000 + b"\r\n"
    assert _status(_exchange(stack.dashboard_url, chunked, piece * 3)) == 401
    assert _rss_mib() - rss < 60  # +142-160 MB before
    _healthz_fast(stack)


def test_a_signed_in_write_past_the_body_limit_is_413(stack: Stack) -> None:
    body = b'{"mode": "' + b"a" * (MAX_BODY_BYTES + 1) + b'"}'
    answer = stack.client.put(
        "/api/v1/plugin/config",
        content=body,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
    )
    assert answer.status_code == 413
    login = stack.client.post("/login", content=b"token=" + b"a" * MAX_ANONYMOUS_BODY_BYTES)
    assert login.status_code == 413
    small = stack.client.put("/api/v1/plugin/config", json={"mode": "basic"})
    assert small.status_code == 401  # a small anonymous write is refused as before


@pytest.fixture
def failing() -> Iterator[str]:
    app = FastAPI()

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("an unhandled error")

    @app.get("/ok")
    def ok() -> dict[str, bool]:
        return {"ok": True}

    server = LiveServer(app)
    yield server.start()
    server.stop()


def test_an_unhandled_500_keeps_the_kept_alive_connection(failing: str) -> None:
    with socket.create_connection(_address(failing), timeout=10) as conn:
        conn.sendall(b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(_read_answer(conn)) == 500
        conn.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(_read_answer(conn)) == 200
