"""Reports that only renew a node's agent (issue 30): the node is reused, never recomputed,
and every build still equals a build without the memo, on varied clusters."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo, same_readings
from app.domain.report import AgentReport, ReceivedReport
from app.web.services.reports.store import Outcome, ReportStore
from tests.bench.engine_bench import cluster_state

NOW = datetime(2030, 1, 1, tzinfo=UTC)  # after the reports cluster_state dates now


def _again(received: ReceivedReport, *, at: datetime, host_process: bool = False) -> AgentReport:
    """The node's report collected again at `at`: the same readings, or one process more."""
    body = received.report.model_dump(mode="json", by_alias=True)
    body["collected_at"] = at.isoformat()
    if host_process:
        body["gpus"][0]["processes"].append({"pid": 4242, "used_memory_mib": 512, "user": "eve"})
    return AgentReport.model_validate(body)


def test_a_report_with_the_same_readings_is_renewed_and_shares_them() -> None:
    state = cluster_state(3)
    store = ReportStore()
    name, first = sorted(state.reports.items())[0]
    assert store.accept(first.report, received_at=NOW) is Outcome.STORED
    later = NOW + timedelta(seconds=15)
    assert store.accept(_again(first, at=later), received_at=later) is Outcome.RENEWED
    renewed = store.latest()[name]
    assert renewed.report.collected_at == later
    assert renewed.report.gpus is first.report.gpus
    assert same_readings(first, renewed)
    changed = _again(first, at=later + timedelta(seconds=15), host_process=True)
    assert store.accept(changed, received_at=later) is Outcome.STORED
    assert not same_readings(first, store.latest()[name])
    failing = _again(store.latest()[name], at=later + timedelta(seconds=30)).model_copy(
        update={"error": "NVML: GPU is lost"}
    )
    assert store.accept(failing, received_at=later) is Outcome.STORED  # not only times


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_builds_over_renewed_and_changed_reports_equal_plain_builds(seed: int) -> None:
    rng = random.Random(seed)
    state = cluster_state(rng.choice([5, 12, 20]))
    options = AccountingOptions(agent_stale_after_s=rng.choice([30.0, 90.0]))
    store = ReportStore()
    for received in state.reports.values():
        store.accept(received.report, received_at=NOW)
    memo = EngineMemo()
    names = sorted(state.reports)
    for step in range(12):
        at = NOW + timedelta(seconds=rng.choice([1, 3, 15, 40]) * (step + 1))
        for name in rng.sample(names, rng.randint(1, len(names))):
            current = store.latest()[name]
            report = _again(current, at=at, host_process=rng.random() < 0.2)
            store.accept(report, received_at=at)
        now = at + timedelta(milliseconds=rng.randint(0, 2500))
        current_state: ClusterState = replace(state, reports=store.latest())
        with_memo = build_snapshot(current_state, options=options, now=now, memo=memo)
        plain = build_snapshot(current_state, options=options, now=now)
        assert with_memo == plain, f"seed {seed}, step {step}"


def test_renewed_reports_reuse_their_nodes_with_the_new_times() -> None:
    state = cluster_state(8)
    options = AccountingOptions()
    store = ReportStore()
    for received in state.reports.values():
        store.accept(received.report, received_at=NOW)
    memo = EngineMemo()
    build_snapshot(replace(state, reports=store.latest()), options=options, now=NOW, memo=memo)
    later = NOW + timedelta(seconds=15)
    for received in list(store.latest().values()):
        assert store.accept(_again(received, at=later), received_at=later) is Outcome.RENEWED
    snapshot = build_snapshot(
        replace(state, reports=store.latest()), options=options, now=later, memo=memo
    )
    assert memo.reused == len(state.nodes)
    agents = [node.agent for node in snapshot.nodes if node.agent is not None]
    assert agents and all(a.collected_at == later and a.age_s == 0.0 for a in agents)
