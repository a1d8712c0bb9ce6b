"""The intake rules as a service (issue 32) and what a stored report asks of the snapshot
side (issue 30): new readings a build now, the same readings none (tests/web/test_renewals.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.domain.report import AgentReport
from app.web.services.reports.digest import cut_time
from app.web.services.reports.intake import ReportIntake, ReportRefused
from app.web.services.reports.node_roster import NodeRoster
from app.web.services.reports.store import Outcome, ReportStore
from tests.web.test_agent_reports import report

NOW = datetime(2026, 12, 4, 1, 0, tzinfo=UTC)


class Pokes:
    def __init__(self) -> None:
        self.now = 0

    def intake(self, store: ReportStore, *, max_bytes: int = 8192) -> ReportIntake:
        def now() -> None:
            self.now += 1

        return ReportIntake(store, max_bytes=max_bytes, clock=lambda: NOW, on_stored=now)


def _body(at: datetime, *, node: str = "gpu-1", used: int = 100) -> bytes:
    return json.dumps(report(node=node, at=at.isoformat(), used=used)).encode()


def test_intake_new_readings_ask_a_build_same_readings_none_older_is_refused() -> None:
    pokes, store = Pokes(), ReportStore()
    intake = pokes.intake(store)
    first = intake.take(_body(NOW), token_node="gpu-1", client="test")
    again = intake.take(_body(NOW + timedelta(seconds=1)), token_node="gpu-1", client="test")
    same = intake.take(_body(NOW + timedelta(seconds=1)), token_node="gpu-1", client="test")
    assert (first.outcome, again.outcome, same.outcome) == (
        Outcome.STORED,
        Outcome.RENEWED,
        Outcome.DUPLICATE,
    )
    changed = intake.take(_body(NOW + timedelta(seconds=2), used=200), token_node=None, client="t")
    assert changed.outcome is Outcome.STORED
    assert pokes.now == 2  # the first report and the changed one; not the renewal
    with pytest.raises(ReportRefused) as older:
        intake.take(_body(NOW - timedelta(seconds=5)), token_node="gpu-1", client="test")
    assert older.value.status_code == 409
    assert store.latest()["gpu-1"].report.gpus[0].memory_used_mib == 200


@pytest.mark.parametrize(
    ("body", "token_node", "status", "words"),
    [
        (_body(NOW, node="gpu-2"), "gpu-1", 403, "token is for node 'gpu-1', not 'gpu-2'"),
        (_body(NOW + timedelta(days=1)), "gpu-1", 422, "ahead of the dashboard's clock"),
        (b'{"schema": 2}', None, 422, "Invalid report"),
        (b"x" * 9000, None, 413, "larger than 8192 bytes"),
    ],
)
def test_intake_refuses_with_the_status_and_stores_nothing(
    body: bytes, token_node: str | None, status: int, words: str
) -> None:
    pokes, store = Pokes(), ReportStore()
    with pytest.raises(ReportRefused) as refused:
        pokes.intake(store).take(body, token_node=token_node, client="test")
    assert refused.value.status_code == status
    assert words in refused.value.message
    assert store.latest() == {} and pokes.now == 0


def test_declared_length_over_the_cap_is_refused_before_reading() -> None:
    intake = Pokes().intake(ReportStore(), max_bytes=100)
    intake.check_declared("100")
    with pytest.raises(ReportRefused) as refused:
        intake.check_declared("101")
    assert refused.value.status_code == 413


def test_the_store_learns_which_nodes_exist_from_the_roster_only() -> None:
    roster = NodeRoster()
    store = ReportStore(roster=roster, max_unknown=2, stale_after_s=90)
    roster.publish(frozenset({"gpu-1"}))
    intake = Pokes().intake(store)
    for node in ("made-up-1", "made-up-2", "made-up-3", "gpu-1"):
        intake.take(_body(NOW, node=node), token_node=None, client="test")
    assert sorted(store.latest()) == ["gpu-1", "made-up-2", "made-up-3"]
    assert store.unknown_nodes == 2
    roster.publish(frozenset({"gpu-1", "made-up-3"}))  # the node joined the cluster
    assert sorted(store.latest(now=NOW)) == ["gpu-1", "made-up-2", "made-up-3"]
    assert store.unknown_nodes == 1
    later = NOW + timedelta(seconds=91)
    assert sorted(store.latest(now=later)) == ["gpu-1", "made-up-3"]  # stale and unknown: gone


# ------------------------------------------------- a body known but for its time (issue 30)


def test_a_body_known_but_for_its_time_is_the_stored_report_with_the_new_time() -> None:
    pokes, store = Pokes(), ReportStore()
    intake = pokes.intake(store)
    intake.take(_body(NOW), token_node="gpu-1", client="test")
    first = store.latest()["gpu-1"]
    later = NOW + timedelta(seconds=15)
    taken = intake.take(_body(later), token_node="gpu-1", client="test")
    renewed = store.latest()["gpu-1"]
    assert taken.outcome is Outcome.RENEWED
    assert renewed.report.gpus is first.report.gpus  # not decoded again
    assert renewed.report.collected_at == later
    assert renewed.report == AgentReport.model_validate_json(_body(later))


@pytest.mark.parametrize(
    ("at", "token_node", "status", "words"),
    [
        (b"not a time", "gpu-1", 422, "collected_at"),
        (b"2026-12-04T01:00:15", "gpu-1", 422, "collected_at"),  # no zone
        (b"2099-01-01T00:00:00Z", "gpu-1", 422, "ahead of the dashboard's clock"),
        (b"2026-12-04T01:00:15Z", "gpu-2", 403, "token is for node 'gpu-2', not 'gpu-1'"),
        (b"2026-12-04T00:59:00Z", "gpu-1", 409, "A newer report"),
    ],
)
def test_a_known_body_with_a_bad_time_or_token_is_refused_as_any_other(
    at: bytes, token_node: str, status: int, words: str
) -> None:
    store = ReportStore()
    intake = Pokes().intake(store)
    intake.take(_body(NOW), token_node="gpu-1", client="test")
    body = _body(NOW).replace(NOW.isoformat().encode(), at)
    with pytest.raises(ReportRefused) as refused:
        intake.take(body, token_node=token_node, client="test")
    assert refused.value.status_code == status
    detail = refused.value.message + str(refused.value.errors or "")
    assert words in detail
    assert store.latest()["gpu-1"].report.collected_at == NOW


def test_only_the_newest_reports_body_is_known() -> None:
    store = ReportStore()
    intake = Pokes().intake(store)
    intake.take(_body(NOW, used=100), token_node=None, client="test")
    intake.take(_body(NOW + timedelta(seconds=1), used=200), token_node=None, client="test")
    back = intake.take(_body(NOW + timedelta(seconds=2), used=100), token_node=None, client="t")
    assert back.outcome is Outcome.STORED  # the first body is not the newest any more
    assert store.latest()["gpu-1"].report.gpus[0].memory_used_mib == 100


def test_a_body_with_two_times_is_decoded_whole() -> None:
    assert cut_time(b'{"collected_at": "a", "x": {"collected_at": "b"}}') is None
    assert cut_time(b'{"node": "gpu-1"}') is None
    one = cut_time(b'{"collected_at" : "2026-12-04T01:00:00Z", "node": "gpu-1"}')
    other = cut_time(b'{"collected_at" : "2026-12-04T02:00:00Z", "node": "gpu-1"}')
    assert one is not None and other is not None
    assert one.digest == other.digest and one.collected_at != other.collected_at
