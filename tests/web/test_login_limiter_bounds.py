"""The failed-login table is bounded: a stranger cycling through source addresses cannot grow it."""

from __future__ import annotations

from app.web.auth import limiter
from app.web.auth.limiter import LoginLimiter


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
