"""When an agent turns stale: the moment the dashboard schedules a build for (issue 30) is
the moment the engine's own rule (`is_stale`, the age on the whole-second clock) first
holds, never a second earlier or later."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.domain.accounting.facts import fresh_from, is_stale, next_stale_at, stale_from
from tests import factories as f

NOW = f.NOW
US = timedelta(microseconds=1)


@pytest.mark.parametrize("fraction_us", [0, 1, 250_000, 999_999])
@pytest.mark.parametrize("stale_after_s", [90.0, 90.5, 0.3, 15.0])
def test_the_stale_moment_is_the_first_one_the_engine_finds_the_agent_stale(
    fraction_us: int, stale_after_s: float
) -> None:
    received = f.report(received_at=NOW + timedelta(microseconds=fraction_us))
    moment = stale_from(received, stale_after_s)
    assert is_stale(received, moment, stale_after_s)
    assert not is_stale(received, moment - US, stale_after_s)
    assert moment > received.received_at + timedelta(seconds=stale_after_s)


def test_the_next_stale_moment_is_the_earliest_of_the_agents_still_fresh() -> None:
    old = f.report("gpu-1", received_at=NOW - timedelta(seconds=200))  # stale already
    due = f.report("gpu-2", received_at=NOW - timedelta(seconds=80, milliseconds=500))
    later = f.report("gpu-3", received_at=NOW - timedelta(seconds=5))
    found = next_stale_at([later, old, due], now=NOW, stale_after_s=90.0)
    assert found == stale_from(due, 90.0) == NOW + timedelta(seconds=10)
    assert next_stale_at([old], now=NOW, stale_after_s=90.0) is None
    assert next_stale_at([], now=NOW, stale_after_s=90.0) is None


@pytest.mark.parametrize("age_s", [89.0, 89.5, 90.0, 90.25, 90.999999, 91.0])
def test_an_agent_is_left_out_exactly_when_the_engine_finds_it_stale_at_now(age_s: float) -> None:
    received = f.report(received_at=NOW + timedelta(milliseconds=300) - timedelta(seconds=age_s))
    now = NOW + timedelta(milliseconds=300)
    found = next_stale_at([received], now=now, stale_after_s=90.0)
    if is_stale(received, now, 90.0):
        assert found is None
    else:
        assert found == stale_from(received, 90.0) and found > now


@pytest.mark.parametrize("now_us", [0, 1, 300_000, 999_999])
@pytest.mark.parametrize("stale_after_s", [90.0, 90.5, 0.3, 15.0])
@pytest.mark.parametrize("offset_us", [-1_000_001, -1, 0, 1, 499_999, 1_000_000])
def test_fresh_from_is_the_stale_rule_solved_for_the_report(
    now_us: int, stale_after_s: float, offset_us: int
) -> None:
    """The engine compares `received_at` with `fresh_from` where `is_stale` reckons an age."""
    now = NOW + timedelta(microseconds=now_us)
    border = fresh_from(now, stale_after_s)
    received = f.report(received_at=border + timedelta(microseconds=offset_us))
    assert is_stale(received, now, stale_after_s) == (received.received_at < border)
