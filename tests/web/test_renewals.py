"""Reports that only renew an agent ask for no build (issue 30); the moment an agent turns
stale is built all the same, with no report arriving.

A renewed report (the same readings, newer times) changes no figure, only the agent's age
and `collected_at`: the periodic build takes it in. Its absence shows when the agent crosses
the stale threshold, and the snapshot loop builds at that very moment.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.services.snapshots.service import SnapshotService
from tests.conftest import runtime_of
from tests.live import wait_for
from tests.web.fakes import app_with_world
from tests.web.test_agent_reports import AUTH, URL, report

NOW = datetime(2026, 12, 4, 1, 0, tzinfo=UTC)
STALE_AFTER_S = 90.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def _post(client: TestClient, clock: Clock, *, used: int = 100) -> None:
    body = report(at=clock.now.isoformat(), used=used)
    assert client.post(URL, json=body, headers=AUTH).status_code == 202


def _reported(*, refresh_interval_s: float) -> tuple[Clock, TestClient, SnapshotService]:
    """An app (no snapshot loop running) whose node has posted its first report."""
    clock = Clock()
    app = app_with_world(
        clock=clock, refresh_interval_s=refresh_interval_s, agent_stale_after_s=STALE_AFTER_S
    )
    client = TestClient(app)
    _post(client, clock)
    return clock, client, runtime_of(app).snapshots


def _agent(client: TestClient) -> dict[str, Any]:
    agent: dict[str, Any] = client.get("/api/v1/nodes/gpu-1").json()["node"]["agent"] or {}
    return agent


def test_a_renewed_report_asks_no_build_and_new_readings_ask_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(SnapshotService, "poke", lambda self: asked.append("build"))
    clock = Clock()
    app = app_with_world(clock=clock, agent_stale_after_s=STALE_AFTER_S)  # no lifespan
    client = TestClient(app)
    snapshots = runtime_of(app).snapshots
    _post(client, clock)  # a node's first report: built at once
    assert asked == ["build"]
    snapshots.rebuild()
    first = _agent(client)["collected_at"]

    clock.now += timedelta(seconds=15)
    _post(client, clock)  # the same readings, newer times
    assert asked == ["build"]
    assert _agent(client)["collected_at"] == first  # no build took it in
    snapshots.rebuild()  # the periodic build does
    assert _agent(client)["collected_at"] != first

    clock.now += timedelta(seconds=15)
    _post(client, clock, used=200)  # new readings
    assert asked == ["build", "build"]


def test_an_agent_that_stops_reporting_is_flagged_stale_when_the_threshold_passes() -> None:
    clock = Clock()
    app = app_with_world(clock=clock, refresh_interval_s=3600, agent_stale_after_s=STALE_AFTER_S)
    snapshots = runtime_of(app).snapshots
    _post(TestClient(app), clock)  # before the loop starts: its first build takes it in
    with TestClient(app) as client:  # the snapshot loop runs; its periodic build is an hour off
        wait_for(lambda: snapshots.builds == 2, what="the loop's first build")
        assert _agent(client)["fresh"] is True
        clock.now += timedelta(seconds=15)
        _post(client, clock)  # renewed: the agent is stale 90 s after this one, not the first
        renewed_at = clock.now

        clock.now = renewed_at + timedelta(seconds=STALE_AFTER_S + 1)  # its stale moment
        wait_for(lambda: _agent(client)["fresh"] is False, what="the stale agent in a build")
        wait_for(lambda: snapshots.builds >= 3, what="that build counted")
        assert snapshots.builds == 3  # that build alone: none for the renewal
        nodes = client.get("/api/v1/nodes").json()["nodes"]
        [stale] = [f for f in nodes[0]["findings"] if f["code"] == "agent-report-stale"]
        assert stale["title"] == "Agent report from gpu-1 is 91 s old"
        assert _agent(client)["collected_at"] == renewed_at.isoformat().replace("+00:00", "Z")


def test_findings_are_worded_in_the_node_list_and_the_node_answer() -> None:
    app = app_with_world(clock=Clock(), agent_stale_after_s=STALE_AFTER_S)
    client = TestClient(app)
    runtime_of(app).snapshots.rebuild()
    [node] = client.get("/api/v1/nodes").json()["nodes"]
    [missing] = [f for f in node["findings"] if f["code"] == "agent-report-missing"]
    assert missing["title"].startswith("No agent report from gpu-1:")
    assert client.get("/api/v1/nodes/gpu-1").json()["node"]["findings"] == node["findings"]


def test_a_build_for_a_change_keeps_the_ages_reckoned_by_the_latest_periodic_one() -> None:
    """Agents' ages are reckoned again once the refresh interval has passed: a build for a
    change in between renews no agent's age (at 10,000 nodes that was most of its work)."""
    clock, client, snapshots = _reported(refresh_interval_s=5.0)
    snapshots.rebuild()
    assert _agent(client)["age_s"] == 0
    clock.now += timedelta(seconds=3)
    snapshots.rebuild(keep_ages=True)  # a change 3 s later
    assert _agent(client)["age_s"] == 0
    assert client.get("/api/v1/summary").json()["generated_at"].startswith("2026-12-04T01:00:03")
    clock.now += timedelta(seconds=2)  # the refresh interval since the ages were reckoned
    snapshots.rebuild(keep_ages=True)
    assert _agent(client)["age_s"] == 5


def test_a_build_for_a_change_reckons_the_ages_again_once_an_agent_turned_stale() -> None:
    clock, client, snapshots = _reported(refresh_interval_s=3600)
    clock.now += timedelta(seconds=80)
    snapshots.rebuild()
    assert (_agent(client)["age_s"], _agent(client)["fresh"]) == (80, True)
    clock.now += timedelta(seconds=5)
    snapshots.rebuild(keep_ages=True)
    assert (_agent(client)["age_s"], _agent(client)["fresh"]) == (80, True)
    clock.now += timedelta(seconds=6)  # 91 s: past the threshold
    snapshots.rebuild(keep_ages=True)
    assert (_agent(client)["age_s"], _agent(client)["fresh"]) == (91, False)


def test_a_lone_report_with_new_readings_is_not_held_back_a_stream_is() -> None:
    """After a build, report-driven builds wait (a stream is batched) only when reports
    with new readings came during that build; a lone one is built at once (reports posted
    one after another, each awaited in the summary, came 0.1-0.15 s late at 5,000 nodes)."""
    app = app_with_world(clock=Clock(), agent_stale_after_s=STALE_AFTER_S)
    snapshots = runtime_of(app).snapshots
    seen = snapshots._source.generation
    started = time.monotonic()
    snapshots._pace(seen, 30.0)  # nothing came during the build
    assert time.monotonic() - started < 5.0
    snapshots.poke()  # one came during the build: built at once
    started = time.monotonic()
    snapshots._pace(seen, 30.0)
    assert time.monotonic() - started < 5.0
    snapshots.poke()  # a second one: a stream, held back
    started = time.monotonic()
    snapshots._pace(seen, 0.3)
    assert time.monotonic() - started >= 0.3


def test_a_build_for_a_change_reads_renewals_at_the_next_reckoning() -> None:
    """Between two reckonings a renewal is not read (its agent keeps the reckoned report's
    times): a build for a change costs that change, not every renewal since. New readings
    are read at once; the next reckoning reads the renewal."""
    clock, client, snapshots = _reported(refresh_interval_s=5.0)
    snapshots.rebuild()
    first = _agent(client)["collected_at"]
    clock.now += timedelta(seconds=1)
    _post(client, clock)  # a renewal
    snapshots.rebuild(keep_ages=True)
    assert _agent(client)["collected_at"] == first
    clock.now += timedelta(seconds=1)
    _post(client, clock, used=4096)  # new readings
    snapshots.rebuild(keep_ages=True)
    assert _agent(client)["collected_at"] != first
    second = _agent(client)["collected_at"]
    gpu = client.get("/api/v1/nodes/gpu-1").json()["node"]["gpus"][0]
    assert gpu["memory_used_mib"] == 4096
    clock.now += timedelta(seconds=1)
    _post(client, clock, used=4096)  # a renewal of the new readings
    snapshots.rebuild(keep_ages=True)
    assert _agent(client)["collected_at"] == second
    clock.now += timedelta(seconds=3)  # the refresh interval: reckoned again
    snapshots.rebuild(keep_ages=True)
    assert _agent(client)["collected_at"] != second
    assert _agent(client)["age_s"] == 3  # from the renewal, read now


def test_a_stale_agents_renewal_is_read_by_a_build_for_a_change() -> None:
    clock, client, snapshots = _reported(refresh_interval_s=3600)
    clock.now += timedelta(seconds=100)
    snapshots.rebuild()
    assert _agent(client)["fresh"] is False
    clock.now += timedelta(seconds=1)
    _post(client, clock)  # the same readings, from an agent stale at the reckoning
    snapshots.rebuild(keep_ages=True)
    assert _agent(client)["fresh"] is True
