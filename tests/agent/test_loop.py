"""The agent's schedule with a fake clock: retries, back-off, the queue of one, --once."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from app.agent.logs import configure_logging
from app.agent.loop import AgentLoop, LatestOnly, RetryPolicy
from app.agent.sender import Outcome
from app.domain.report import AgentReport

START = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
OK = Outcome(delivered=True, retry=False, detail="accepted", status=202)
DOWN = Outcome(delivered=False, retry=True, detail="cannot reach dashboard: refused")
BAD_TOKEN = Outcome(delivered=False, retry=False, detail="dashboard refused the token", status=401)


class FakeTime:
    """A clock that only moves when the agent waits; stops the loop at `stop_at`."""

    def __init__(self, *, stop_at: float = float("inf")) -> None:
        self.now = 0.0
        self.stop_at = stop_at
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        if self.now + seconds >= self.stop_at:
            self.now = self.stop_at
            return True
        self.now += seconds
        return False


class Dashboard:
    """Answers posts from a script of outcomes per time window; records what it got."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.posts: list[tuple[float, AgentReport]] = []
        self.time: FakeTime | None = None

    def post(self, report: AgentReport) -> Outcome:
        assert self.time is not None
        self.posts.append((self.time.now, report))
        answer = self.answer
        if callable(answer):
            return answer(self.time.now)  # type: ignore[no-any-return]
        assert isinstance(answer, Iterable)
        return next(iter(answer)) if not isinstance(answer, list) else answer.pop(0)


def _report(time: FakeTime, *, source: str = "nvml") -> AgentReport:
    return AgentReport(
        schema=1,
        node="gpu-node-1",
        collected_at=START + timedelta(seconds=time.now),
        source=source,  # type: ignore[arg-type]
        error="no NVIDIA driver: NVML library not found" if source == "none" else None,
    )


def _loop(
    time: FakeTime,
    dashboard: Dashboard,
    log: io.StringIO,
    *,
    source: str = "nvml",
    policy: RetryPolicy | None = None,
) -> AgentLoop:
    dashboard.time = time
    return AgentLoop(
        collect=lambda: _report(time, source=source),
        post=dashboard.post,
        interval_s=15.0,
        clock=time.clock,
        wait=time.wait,
        log=configure_logging(node="gpu-node-1", stream=log),
        policy=policy or RetryPolicy(base_s=1.0, cap_s=60.0, once_attempts=4),
        rng=random.Random(3),
    )


def _lines(log: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.getvalue().splitlines()]


def test_latest_only_newer_report_replaces_unsent_older() -> None:
    time = FakeTime()
    queue = LatestOnly()
    older = _report(time)
    time.now = 15
    newer = _report(time)

    assert queue.put(older) is None
    assert queue.put(newer) is older
    assert queue.peek() is newer


def test_run_once_delivered_first_try_returns_true_without_waiting() -> None:
    time, log = FakeTime(), io.StringIO()
    dashboard = Dashboard([OK])

    assert _loop(time, dashboard, log).run_once() is True
    assert time.waits == []
    (line,) = _lines(log)
    assert (line["msg"], line["status"], line["node"]) == ("report delivered", 202, "gpu-node-1")


def test_run_once_retries_with_growing_backoff_until_delivered() -> None:
    time, log = FakeTime(), io.StringIO()
    dashboard = Dashboard([DOWN, DOWN, DOWN, OK])

    assert _loop(time, dashboard, log).run_once() is True

    assert len(dashboard.posts) == 4
    for wait, ceiling in zip(time.waits, [1.0, 2.0, 4.0], strict=True):
        assert ceiling / 2 <= wait <= ceiling
    assert {post[1].collected_at for post in dashboard.posts} == {START}


def test_run_once_gives_up_after_bounded_attempts() -> None:
    time, log = FakeTime(), io.StringIO()
    dashboard = Dashboard(lambda now: DOWN)

    assert _loop(time, dashboard, log).run_once() is False

    assert len(dashboard.posts) == 4
    assert _lines(log)[-1]["msg"] == "report not delivered, giving up"


def test_run_once_wrong_token_is_not_retried() -> None:
    time, log = FakeTime(), io.StringIO()
    dashboard = Dashboard([BAD_TOKEN])

    assert _loop(time, dashboard, log).run_once() is False

    assert len(dashboard.posts) == 1
    (line,) = _lines(log)
    assert (line["level"], line["msg"], line["status"]) == (
        "error",
        "dashboard refused the token",
        401,
    )


def test_run_once_without_gpu_reader_logs_one_line_and_sends_nothing() -> None:
    time, log = FakeTime(), io.StringIO()
    dashboard = Dashboard([OK])

    assert _loop(time, dashboard, log, source="none").run_once() is False

    assert dashboard.posts == []
    (line,) = _lines(log)
    assert (line["level"], line["msg"]) == ("error", "no NVIDIA driver: NVML library not found")


def test_run_sends_one_report_per_interval_when_dashboard_is_up() -> None:
    time, log = FakeTime(stop_at=60), io.StringIO()
    dashboard = Dashboard(lambda now: OK)

    _loop(time, dashboard, log).run()

    assert [when for when, _ in dashboard.posts] == [0, 15, 30, 45]
    assert [line["msg"] for line in _lines(log)] == ["report delivered"]  # then debug only


def test_run_dashboard_down_keeps_only_newest_report_and_sends_it_on_recovery() -> None:
    time, log = FakeTime(stop_at=100), io.StringIO()
    dashboard = Dashboard(lambda now: DOWN if now < 50 else OK)

    _loop(time, dashboard, log).run()

    delivered_at, delivered = next((when, report) for when, report in dashboard.posts if when >= 50)
    newest_at = START + timedelta(seconds=15 * (delivered_at // 15))
    assert delivered.collected_at == newest_at  # the newest report, not the first unsent one
    assert delivered.collected_at >= START + timedelta(seconds=45)
    assert delivered_at <= 50 + 60  # retried within the back-off cap
    messages = [line["msg"] for line in _lines(log)]
    assert messages.count("unsent report replaced by a newer one") >= 3
    assert "report delivered" in messages


def test_run_backoff_is_capped_and_does_not_restart_with_each_new_report() -> None:
    time, log = FakeTime(stop_at=600), io.StringIO()
    dashboard = Dashboard(lambda now: DOWN)
    policy = RetryPolicy(base_s=1.0, cap_s=20.0)

    _loop(time, dashboard, log, policy=policy).run()

    gaps = [b[0] - a[0] for a, b in zip(dashboard.posts, dashboard.posts[1:], strict=False)]
    assert max(gaps) <= 20.0
    assert len(dashboard.posts) < 45  # about one try per 10-20 s, not a burst per report
    assert min(gaps[6:]) >= 10.0


def test_run_permanent_error_drops_report_and_tries_next_interval() -> None:
    time, log = FakeTime(stop_at=40), io.StringIO()
    dashboard = Dashboard(lambda now: BAD_TOKEN)

    _loop(time, dashboard, log).run()

    assert [when for when, _ in dashboard.posts] == [0, 15, 30]
    assert [line["status"] for line in _lines(log)] == [401, 401, 401]


def test_run_honours_retry_after_from_429() -> None:
    time, log = FakeTime(stop_at=14), io.StringIO()
    busy = Outcome(
        delivered=False, retry=True, detail="rate-limited", status=429, retry_after_s=9.0
    )
    dashboard = Dashboard([busy, OK])

    _loop(time, dashboard, log).run()

    assert [when for when, _ in dashboard.posts] == [0, 9]


def test_run_without_gpu_reader_posts_none_reports_and_logs_reason_once() -> None:
    time, log = FakeTime(stop_at=50), io.StringIO()
    dashboard = Dashboard(lambda now: OK)

    _loop(time, dashboard, log, source="none").run()

    assert [report.source for _, report in dashboard.posts] == ["none"] * 4
    errors = [line for line in _lines(log) if line["level"] == "error"]
    assert [line["msg"] for line in errors] == ["no NVIDIA driver: NVML library not found"]
