"""ETag / 304 and gzip on pages, fragments and JSON bodies (app.web.compression)."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.web.compression import accepts_gzip, matches
from tests.conftest import runtime_of
from tests.live import wait_for
from tests.web.fakes import app_with_world

PLAIN = {"Accept-Encoding": "identity"}
GZIP = {"Accept-Encoding": "gzip, deflate"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    """The app with one snapshot served throughout: its loop's first build (at start) waited
    for, and no periodic one during a test. A build between two requests is a new body and
    a new ETag, so without this a slow first request could see the first body and its repeat
    the loop's."""
    app = app_with_world(refresh_interval_s=3600)
    with TestClient(app) as test_client:
        snapshots = runtime_of(app).snapshots
        wait_for(lambda: snapshots.builds == 2, what="the loop's first build")  # after the fake's
        yield test_client


@pytest.mark.parametrize(
    "path",
    ["/", "/fragments/overview", "/findings", "/api/v1/summary", "/api/v1/nodes", "/metrics"],
)
def test_a_repeated_request_with_the_etag_gets_304_and_no_body(
    client: TestClient, path: str
) -> None:
    first = client.get(path, headers=PLAIN)
    etag = first.headers["etag"]

    again = client.get(path, headers={**PLAIN, "If-None-Match": etag})

    assert first.status_code == 200 and len(first.content) > 0
    assert etag.startswith('W/"') and len(etag) == 4 + 24
    assert (again.status_code, again.content) == (304, b"")
    assert again.headers["etag"] == etag
    assert again.headers["x-content-type-options"] == "nosniff"  # still the security headers


def test_a_changed_body_gets_a_new_etag_and_the_old_one_a_full_answer(client: TestClient) -> None:
    runtime = runtime_of(client.app)
    etag = client.get("/api/v1/summary", headers=PLAIN).headers["etag"]
    runtime.snapshots.rebuild()  # a new snapshot: generated_at moves on

    fresh = client.get("/api/v1/summary", headers={**PLAIN, "If-None-Match": etag})

    assert fresh.status_code == 200
    assert fresh.headers["etag"] != etag
    assert fresh.json()["totals"]["allocatable"] == 4


def test_gzip_when_accepted_same_content_and_etag(client: TestClient) -> None:
    plain = client.get("/", headers=PLAIN)
    packed = client.get("/", headers=GZIP)
    raw = client.stream("GET", "/", headers=GZIP)
    with raw as response:
        wire = b"".join(response.iter_raw())

    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.headers["etag"] == plain.headers["etag"]
    assert "Accept-Encoding" in packed.headers["vary"]
    assert packed.text == plain.text
    assert gzip.decompress(wire) == plain.content
    assert len(wire) < len(plain.content) / 3


def test_pages_ask_browsers_to_revalidate_instead_of_storing_nothing(client: TestClient) -> None:
    page = client.get("/fragments/overview")

    assert page.headers["cache-control"] == "private, no-cache"
    assert client.get("/api/v1/summary").headers["cache-control"] == "no-cache"


def test_small_bodies_errors_and_writes_are_left_alone(client: TestClient) -> None:
    healthz = client.get("/healthz", headers=GZIP)
    missing = client.get("/api/v1/nodes/no-such-node", headers=GZIP)
    write = client.post("/api/v1/agent/reports", headers=GZIP, content=b"{}")

    assert "content-encoding" not in healthz.headers  # 15 bytes: not worth it
    assert missing.status_code == 404 and "etag" not in missing.headers
    assert write.status_code == 401 and "etag" not in write.headers


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('W/"abc"', True),
        ('"abc"', True),
        ('W/"x", W/"abc"', True),
        ("*", True),
        ('W/"abcd"', False),
        ("", False),
    ],
)
def test_if_none_match_weak_comparison(header: str, expected: bool) -> None:
    assert matches(header, 'W/"abc"') is expected


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip", True),
        ("br, gzip;q=0.8", True),
        ("gzip;q=0", False),
        ("identity", False),
        ("*", True),
        ("", False),
    ],
)
def test_accept_encoding(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected
