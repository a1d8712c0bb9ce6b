"""Token reviews run in their own bounded pool, apart from the threads that serve pages.

With the API server frozen, pages waited 8.8 s behind token reviews (issue 33): reviews took
the threads that serve pages. Now at most REVIEW_WORKERS run, MAX_PENDING_REVIEWS wait, and
the next one is answered 503 at once, while pages answer as usual.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from app.kube.tokenreview import ReviewedToken
from app.web.app import create_app
from app.web.auth.agent_auth import MAX_PENDING_REVIEWS, REVIEW_WORKERS
from tests.conftest import stack_settings
from tests.live import LiveServer, wait_for
from tests.web.fakes import FakeSource
from tests.web.test_report_trust import report

ACCOUNT = "gpu-slots:gpu-slots-agent"


def _part(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _token(n: int) -> str:
    """A token of the agents' shape (the review decides; here it never comes back in time)."""
    claims = {
        "sub": f"system:serviceaccount:{ACCOUNT}",
        "aud": ["gpu-slots"],
        "exp": int(time.time()) + 3600,
        "jti": str(n),
    }
    return f"{_part({'alg': 'RS256'})}.{_part(claims)}.c2ln"


class FrozenReviews:
    """A TokenReview API that answers only once released, counting reviews at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.running = 0
        self.most = 0

    def review(self, token: str, *, audience: str) -> ReviewedToken:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.release.wait(30)
        with self._lock:
            self.running -= 1
        return ReviewedToken(False, error="frozen")

    def pod_node(self, namespace: str, name: str, *, uid: str | None) -> str | None:
        return None


@pytest.fixture
def frozen() -> Iterator[tuple[str, FrozenReviews]]:
    reviews = FrozenReviews()
    settings = stack_settings(agent_auth="serviceaccount", agent_service_account=ACCOUNT)
    app = create_app(settings, source=FakeSource(), token_reviewer=reviews)
    server = LiveServer(app)
    yield server.start(), reviews
    reviews.release.set()
    server.stop()


def test_frozen_reviews_take_their_own_pool_and_pages_still_answer(
    frozen: tuple[str, FrozenReviews],
) -> None:
    url, reviews = frozen
    extra = 6
    body = json.dumps(report()).encode()

    def post(n: int) -> int:
        headers = {"Authorization": f"Bearer {_token(n)}", "Content-Type": "application/json"}
        return httpx.post(
            f"{url}/api/v1/agent/reports", content=body, headers=headers, timeout=40
        ).status_code

    with ThreadPoolExecutor(MAX_PENDING_REVIEWS + extra) as senders:
        answers = [senders.submit(post, n) for n in range(MAX_PENDING_REVIEWS + extra)]
        wait_for(
            lambda: sum(a.done() for a in answers) >= extra,
            timeout_s=20,
            what="the reviews past the pool's bound to be refused",
        )
        assert sorted(a.result() for a in answers if a.done()) == [503] * extra
        started = time.monotonic()
        with httpx.Client(base_url=url, timeout=10) as client:
            for path in ("/healthz", "/api/v1/summary", "/"):
                assert client.get(path).status_code == 200, path
        assert time.monotonic() - started < 5.0  # generous: pages waited 8.8 s before
        assert reviews.most == REVIEW_WORKERS
        reviews.release.set()
        statuses = sorted(a.result() for a in answers)
    assert statuses.count(401) == MAX_PENDING_REVIEWS
