"""Tables a stranger fills are bounded: failed logins per source address, TokenReview outcomes
per token (a stranger cycling through addresses or tokens cannot grow them)."""

from __future__ import annotations

from app.web.auth import limiter
from app.web.auth.agent_auth import MAX_CACHED, AgentAuth, AgentRefused
from app.web.auth.limiter import LoginLimiter
from tests.conftest import stack_settings


def test_failed_logins_of_more_clients_than_tracked_keep_the_table_bounded() -> None:
    now = [0.0]
    table = LoginLimiter(clock=lambda: now[0])
    bound = limiter._MAX_TRACKED_CLIENTS
    for n in range(bound + 500):
        table.fail(f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}")
    assert len(table._failures) == bound  # the oldest clients go first
    assert "10.0.0.0" not in table._failures
    for _ in range(table.allowed):
        table.fail("203.0.113.7")
    assert table.retry_after_s("203.0.113.7") is not None  # a new client is still limited
    assert len(table._failures) <= bound


def test_token_review_outcomes_kept_are_bounded_newest_kept() -> None:
    now = [0.0]
    auth = AgentAuth(stack_settings(), reviewer=None, clock=lambda: now[0])
    for n in range(MAX_CACHED + 100):
        auth._remember(f"token-{n}", AgentRefused(401, "no"), now=now[0], ttl_s=10.0)
    assert len(auth._cache) == MAX_CACHED
    assert f"token-{MAX_CACHED + 99}" in auth._cache and "token-0" not in auth._cache
    now[0] = 11.0  # once expired, outcomes are dropped before any live one
    auth._remember("fresh", AgentRefused(401, "no"), now=now[0], ttl_s=10.0)
    assert list(auth._cache) == ["fresh"]
