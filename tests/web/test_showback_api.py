"""GET /api/v1/showback, GET /api/v1/nodes/{name}/holders, /usage/history and /metrics over
the history file, on the app factory with an injected clock (samples taken by hand)."""

from __future__ import annotations

import csv
import io
import os
import re
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.domain.snapshot import Snapshot
from app.web.app import create_app
from app.web.services.history.sampler import MAX_CORE_SHARE, HistorySampler
from tests import factories as f
from tests.bench.history_bench import held_cluster
from tests.conftest import AGENT_TOKEN, runtime_of, stack_settings
from tests.web.fakes import FakeSource, fake_source

INTERVAL_S = 60.0  # the product samples every 15 s by default; fewer samples, same sums
START = f.NOW


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _source() -> FakeSource:
    """gpu-1: 4 GPUs time-sliced in 4. ml/train (user carol) holds a slot of GPU 0 and runs
    on it; serving/infer holds 2 slots of GPU 1 and runs nothing."""
    text = f.time_slicing_yaml(4)
    train = f.pod("train", namespace="ml")
    train["metadata"]["labels"] = {"user": "carol"}
    infer = f.pod("infer", namespace="serving", gpus=2)
    return FakeSource(
        nodes=[f.node("gpu-1", allocatable=16)],
        pods=[f.plugin_pod("gpu-1"), train, infer],
        daemonsets=[f.plugin_daemonset(configmap=f.CONFIGMAP, config_file="/config/config.yaml")],
        configmaps=[f.configmap({"config.yaml": text})],
    )


def _report(client: TestClient, clock: Clock) -> None:
    uuid0, uuid1 = f.gpu_uuid("gpu-1", 0), f.gpu_uuid("gpu-1", 1)
    readings = [f.gpu(0, processes=[f.proc(7, pod_uid="uid-train")]), *f.gpus(4)[1:]]
    assignments = [
        f.assignment("train", [f"{uuid0}::0"]),
        f.assignment("infer", [f"{uuid1}::0", f"{uuid1}::1"], namespace="serving"),
    ]
    body = f.report("gpu-1", readings, assignments=assignments, received_at=clock.now)
    answer = client.post(
        "/api/v1/agent/reports",
        json=body.report.model_dump(mode="json", by_alias=True),
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
    )
    assert answer.status_code == 202, answer.text


def _app(path: Path | None, clock: Clock, **settings: Any) -> tuple[FastAPI, TestClient]:
    values: dict[str, Any] = {"history_interval_s": INTERVAL_S, "agent_stale_after_s": 3600}
    if path is not None:
        values["history_path"] = path
    app = create_app(stack_settings(**values, **settings), source=_source(), clock=clock)
    client = TestClient(app)
    _report(client, clock)
    runtime_of(app).snapshots.rebuild()
    return app, client


def _run(app: FastAPI, clock: Clock, samples: int) -> None:
    """`samples` samples, one per interval (the clock moved by hand: nothing waits)."""
    sampler = runtime_of(app).history.sampler
    for _ in range(samples):
        assert sampler.sample_now() is not None
        clock.now += timedelta(seconds=INTERVAL_S)


Made = Callable[..., tuple[FastAPI, TestClient, Clock]]


@pytest.fixture
def made(tmp_path: Path) -> Made:
    def make(samples: int = 4 * 60, path: Path | None = tmp_path / "h.sqlite") -> Any:
        clock = Clock()
        app, client = _app(path, clock)
        _run(app, clock, samples)
        return app, client, clock

    return make


def _window(hours: float = 4) -> dict[str, str]:
    return {"from": START.isoformat(), "to": (START + timedelta(hours=hours)).isoformat()}


def test_showback_four_hours_of_quarter_slices_reconcile(made: Made) -> None:
    _, client, _ = made()
    answer = client.get("/api/v1/showback", params={**_window(), "by": "owner"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"from", "to", "by", "rows", "totals"}
    rows = {row["key"]: row for row in body["rows"]}
    assert rows["ml/carol"] == {
        "key": "ml/carol",
        "slotHours": {"nvidia.com/gpu": 4.0},
        "gpuHours": 1.0,
        "usedGpuHours": 1.0,
        "idleHeldGpuHours": 0.0,
    }
    assert rows["serving/infer"]["gpuHours"] == 2.0
    assert rows["serving/infer"]["idleHeldGpuHours"] == 2.0
    total = sum(row["gpuHours"] for row in body["rows"])
    assert body["totals"]["gpuHours"] == pytest.approx(total, abs=1e-9)
    assert body["totals"]["physicalGpuHours"] == 16.0
    assert body["totals"]["gpuHours"] <= body["totals"]["physicalGpuHours"]


def test_showback_by_node_and_namespace_add_up_to_the_same_total(made: Made) -> None:
    _, client, _ = made()
    totals = {
        by: client.get("/api/v1/showback", params={**_window(), "by": by}).json()
        for by in ("namespace", "owner", "node")
    }
    assert {by: body["totals"]["gpuHours"] for by, body in totals.items()} == {
        "namespace": 3.0,
        "owner": 3.0,
        "node": 3.0,
    }
    assert [row["key"] for row in totals["node"]["rows"]] == ["gpu-1"]


def test_showback_csv_has_the_same_rows(made: Made) -> None:
    _, client, _ = made()
    answer = client.get(
        "/api/v1/showback", params={**_window(), "by": "namespace", "format": "csv"}
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert [(row["namespace"], float(row["gpuHours"])) for row in rows] == [
        ("serving", 2.0),
        ("ml", 1.0),
    ]
    assert float(rows[1]["slotHours:nvidia.com/gpu"]) == 4.0


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"from": "2026-12-01T04:00:00Z", "to": "2026-12-01T03:00:00Z"}, "must be before"),
        ({"from": "2020-01-01T00:00:00Z"}, "older than the history keeps: 35 days"),
        ({"by": "team"}, "`by` must be one of namespace, owner, node"),
        ({"from": "2026-12-01T03:00:00"}, "with a zone"),
        ({"from": "yesterday"}, "Invalid request"),
        ({"format": "xml"}, "Invalid request"),
    ],
)
def test_showback_refuses_windows_it_cannot_answer(
    made: Made, params: dict[str, str], words: str
) -> None:
    _, client, _ = made(samples=1)
    answer = client.get("/api/v1/showback", params=params)
    assert answer.status_code == 422, answer.text
    assert words in answer.json()["detail"]


def test_holders_at_a_moment_name_pods_slots_and_config(made: Made) -> None:
    _, client, _ = made(samples=8)
    at = (START + timedelta(seconds=40)).isoformat()
    answer = client.get("/api/v1/nodes/gpu-1/holders", params={"at": at})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["engine"] == "sqlite"
    gpus = {gpu["index"]: gpu for gpu in body["gpus"]}
    assert sorted(gpus) == [0, 1, 2, 3]
    assert gpus[0]["holders"] == [{"pod": "ml/train", "resource": "nvidia.com/gpu", "slots": 1}]
    assert gpus[1]["holders"] == [
        {"pod": "serving/infer", "resource": "nvidia.com/gpu", "slots": 2}
    ]
    assert (gpus[1]["mode"], gpus[1]["replicas"]) == ("time-slicing", 4)
    assert gpus[1]["config"].startswith("configmap/")
    before = client.get(
        "/api/v1/nodes/gpu-1/holders", params={"at": (START - timedelta(hours=1)).isoformat()}
    )
    assert before.json()["gpus"] == []


def test_unusable_file_is_a_503_that_says_why(made: Made, tmp_path: Path) -> None:
    (tmp_path / "volume").write_text("a file where the history's folder should be")
    _, client, _ = made(samples=2, path=tmp_path / "volume" / "h.sqlite")
    answer = client.get("/api/v1/showback")
    assert answer.status_code == 503
    assert "cannot be written" in answer.json()["detail"]
    assert client.get("/api/v1/summary").status_code == 200  # the present is unaffected
    assert "gpu_slots_held_gpus{" in client.get("/metrics").text  # and Prometheus still fed
    page = client.get("/usage/history")
    assert page.status_code == 200
    assert 'data-testid="history-problem"' in page.text
    assert "cannot be written" in page.text


def test_without_a_path_the_history_is_kept_in_memory(made: Made) -> None:
    _, client, _ = made(samples=60, path=None)
    body = client.get("/api/v1/showback", params=_window(1)).json()
    assert body["totals"]["gpuHours"] == 0.75
    assert "GEO_MLOPS_HISTORY_PATH" in client.get("/usage/history").text


def test_disk_full_is_said_on_the_page_and_kept_figures_stay(made: Made) -> None:
    app, client, clock = made(samples=60)
    runtime = runtime_of(app)
    history = runtime.history
    kept = history.sampler.store
    # the file capped at its size: SQLite's own "database or disk is full", as on a full
    # volume; reads go on
    kept.limit_pages(kept.page_count())
    crowd = [f.pod(f"job-{n}", namespace=f"team-{n}") for n in range(300)]
    source = fake_source(runtime)
    source.set("pods", [*source.items("pods"), *crowd])
    runtime.snapshots.rebuild()  # 300 new teams: rows that need new pages
    _run(app, clock, 2)
    problem = history.problem()
    assert problem is not None and problem.code == "history.disk-full"
    page = client.get("/usage/history")
    assert "disk is full" in page.text
    body = client.get("/api/v1/showback", params=_window(1)).json()
    assert body["totals"]["gpuHours"] == 0.75
    assert client.get("/api/v1/summary").status_code == 200


def test_history_outlives_a_restart_on_the_same_file(made: Made, tmp_path: Path) -> None:
    first, client, clock = made(samples=60)
    before = client.get("/api/v1/showback", params=_window(1)).json()
    runtime_of(first).history.sampler.store.close()
    _again, client_again = _app(tmp_path / "h.sqlite", clock)
    assert client_again.get("/api/v1/showback", params=_window(1)).json() == before
    assert before["totals"]["gpuHours"] == 0.75


def test_retention_prunes_the_file_and_restarts_keep_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GEO_MLOPS_HISTORY_RETENTION_DAYS=1: an hour kept, a restart 20 hours later goes on
    with it; a restart 26 hours after the start prunes the first hour (ended over a day
    before) and keeps the 20th."""
    monkeypatch.setenv("GEO_MLOPS_HISTORY_RETENTION_DAYS", "1")
    path, clock = tmp_path / "h.sqlite", Clock()

    def an_hour_from(start: datetime) -> tuple[FastAPI, TestClient]:
        clock.now = start
        app, client = _app(path, clock)
        _run(app, clock, 60)
        return app, client

    def pods_at(client: TestClient, moment: datetime) -> list[str]:
        answer = client.get("/api/v1/nodes/gpu-1/holders", params={"at": moment.isoformat()})
        assert answer.status_code == 200, answer.text
        return sorted(h["pod"] for gpu in answer.json()["gpus"] for h in gpu["holders"])

    first, _ = an_hour_from(START)
    runtime_of(first).history.sampler.store.close()
    later = START + timedelta(hours=20)
    second, client = an_hour_from(later)
    assert runtime_of(second).history.retention_days == 1
    window = {"from": START.isoformat(), "to": (later + timedelta(hours=1)).isoformat()}
    assert client.get("/api/v1/showback", params=window).json()["totals"]["gpuHours"] == 1.5
    runtime_of(second).history.sampler.store.close()
    third, client = an_hour_from(START + timedelta(hours=26))
    assert pods_at(client, START + timedelta(minutes=30)) == []  # pruned
    assert pods_at(client, later + timedelta(minutes=30)) == ["ml/train", "serving/infer"]
    window = {"from": later.isoformat(), "to": (later + timedelta(hours=1)).isoformat()}
    assert client.get("/api/v1/showback", params=window).json()["totals"]["gpuHours"] == 0.75
    old = {"from": START.isoformat(), "to": later.isoformat()}
    assert client.get("/api/v1/showback", params=old).status_code == 422  # over the retention
    runtime_of(third).history.sampler.store.close()


def test_two_replicas_give_the_same_answers(tmp_path: Path) -> None:
    answers = []
    for replica in ("a", "b"):
        clock = Clock()
        app, client = _app(tmp_path / replica / "h.sqlite", clock)
        _run(app, clock, 15)
        answers.append(
            (
                client.get("/api/v1/showback", params={**_window(), "by": "owner"}).json(),
                client.get("/api/v1/nodes/gpu-1/holders", params={"at": START.isoformat()}).json(),
            )
        )
    assert answers[0] == answers[1]


def test_two_dashboards_on_one_file_one_writes_the_other_says_so_and_takes_over(
    tmp_path: Path,
) -> None:
    """Two dashboards on one history file (two replicas on one volume): the first to open it
    writes; the other reads the same figures and says on its page and /metrics that another
    process writes; once the first ended, the other writes on from where it left off."""
    path, clock = tmp_path / "h.sqlite", Clock()
    (first, first_client), (second, second_client) = _app(path, clock), _app(path, clock)
    samplers = [runtime_of(app).history.sampler for app in (first, second)]
    for _ in range(60):
        for sampler in samplers:
            assert sampler.sample_now() is not None
        clock.now += timedelta(seconds=INTERVAL_S)
    assert "\ngpu_slots_history_writing 1\n" in first_client.get("/metrics").text
    assert "\ngpu_slots_history_writing 0\n" in second_client.get("/metrics").text
    writer = f"(pid {os.getpid()})"  # both in this process: each holds the file apart
    for lang, words in (("en", "reads the history file that"), ("ko", "읽기만 합니다")):
        page = second_client.get("/usage/history", params={"lang": lang}).text
        (note,) = re.findall(r'data-testid="history-writer">([^<]*)<', page)
        assert words in note and writer in note, note
    assert 'data-testid="history-writer"' not in first_client.get("/usage/history").text
    an_hour = first_client.get("/api/v1/showback", params=_window(1)).json()
    assert second_client.get("/api/v1/showback", params=_window(1)).json() == an_hour
    assert an_hour["totals"]["gpuHours"] == 0.75
    samplers[0].store.close()  # the first dashboard ended
    _run(second, clock, 60)
    assert "\ngpu_slots_history_writing 1\n" in second_client.get("/metrics").text
    assert 'data-testid="history-writer"' not in second_client.get("/usage/history").text
    two_hours = second_client.get("/api/v1/showback", params=_window(2)).json()
    assert two_hours["totals"]["gpuHours"] == 1.5  # each hour once


def test_metrics_carry_the_latest_sample(made: Made) -> None:
    _, client, _ = made(samples=1)
    text = client.get("/metrics").text
    assert 'gpu_slots_held_gpus{namespace="ml",owner="ml/carol",node="gpu-1"} 0.25\n' in text
    held = 'namespace="serving",owner="serving/infer",node="gpu-1",resource="nvidia.com/gpu"'
    assert f"gpu_slots_held_slots{{{held}}} 2\n" in text


@pytest.mark.parametrize(("lang", "words"), [("en", "Showback"), ("ko", "사용량 배분")])
def test_history_page_draws_svg_charts_in_both_languages(made: Made, lang: str, words: str) -> None:
    _, client, _ = made(samples=60)
    page = client.get("/usage/history", params={"lang": lang, "by": "owner"})
    assert page.status_code == 200, page.text
    assert words in page.text
    assert page.text.count('data-testid="history-column"') == 24
    assert page.text.count('data-testid="showback-bar"') == 2
    assert 'data-testid="showback-row" data-key="ml/carol"' in page.text
    assert "/api/v1/showback?from=" in page.text and "format=csv" in page.text


def _silent_server() -> tuple[socket.socket, str]:
    """A listening socket that accepts and never answers: a Prometheus too slow to wait for."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server, f"http://127.0.0.1:{server.getsockname()[1]}"


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"  # closed once the block ends


@pytest.mark.parametrize("fault", ["down", "slow"])
def test_prometheus_down_or_slow_is_said_and_the_present_keeps_serving(
    tmp_path: Path, fault: str
) -> None:
    silent, url = _silent_server() if fault == "slow" else (None, _closed_port())
    try:
        clock = Clock()
        app, client = _app(
            tmp_path / "h.sqlite", clock, prometheus_url=url, prometheus_timeout_s=0.3
        )
        _run(app, clock, 2)
        answer = client.get("/api/v1/showback")
        assert answer.status_code == 503
        words = {"down": "cannot be reached", "slow": "too slow"}[fault]
        assert words in answer.json()["detail"]
        holders = client.get("/api/v1/nodes/gpu-1/holders", params={"at": START.isoformat()})
        assert holders.status_code == 503
        page = client.get("/usage/history", params={"lang": "ko"})
        assert page.status_code == 200
        assert {"down": "연결할 수 없습니다", "slow": "너무 느립니다"}[fault] in page.text
        assert client.get("/api/v1/summary").status_code == 200
        assert client.get("/usage").status_code == 200
    finally:
        if silent is not None:
            silent.close()


@pytest.mark.parametrize(("lang", "words"), [("en", "GPU 1"), ("ko", "플러그인 설정")])
def test_node_history_page_draws_a_timeline_per_gpu(made: Made, lang: str, words: str) -> None:
    _, client, _ = made(samples=60)
    node_page = client.get("/nodes/gpu-1", params={"lang": lang})
    assert 'href="/nodes/gpu-1/history?lang=' in node_page.text
    page = client.get("/nodes/gpu-1/history", params={"lang": lang})
    assert page.status_code == 200, page.text
    assert words in page.text
    assert page.text.count('data-testid="gpu-timeline"') == 4
    holds = re.findall(r'data-testid="timeline-hold"><th scope="row">([^<]+)</th>', page.text)
    assert holds == ["ml/train", "serving/infer"]
    assert "time-slicing \N{MULTIPLICATION SIGN} 4" in page.text


def test_holds_between_are_the_spans_inside_the_window(made: Made) -> None:
    app, _, _ = made(samples=60)
    store = runtime_of(app).history.sampler.store
    start = START + timedelta(minutes=30)
    spans = store.holds_between(
        "gpu-1", start.timestamp(), (start + timedelta(hours=2)).timestamp()
    )
    assert [(h.pod, h.since_s, h.span_s) for h in spans] == [
        ("ml/train", start.timestamp(), 1800.0),
        ("serving/infer", start.timestamp(), 1800.0),
    ]


def test_a_costly_sample_stands_for_longer_so_sampling_stays_under_a_twentieth_of_a_core(
    made: Made,
) -> None:
    app, _, clock = made(samples=1)
    snapshot = runtime_of(app).snapshots.current()

    def slow_pods() -> list[f.Manifest]:  # 20 ms of this thread's CPU: a big cluster's pass
        until = time.thread_time() + 0.02
        while time.thread_time() < until:
            pass
        return []

    sampler = HistorySampler(
        None,
        current=lambda: snapshot,
        pods=slow_pods,
        clock=clock,
        interval_s=0.1,
        retention_days=35,
    )
    assert sampler.sample_now() is not None
    assert sampler.span_s >= 0.02 / MAX_CORE_SHARE  # sampled every 0.4 s or more, not 0.1


@pytest.mark.parametrize(
    ("at", "words"),
    [("2026-02-30T03:00:00Z", "is no time"), ("2026-12-01T03:00", "with a zone"), ("0", "Invalid")],
)
def test_holders_refuse_a_moment_that_is_not_one(made: Made, at: str, words: str) -> None:
    _, client, _ = made(samples=1)
    answer = client.get("/api/v1/nodes/gpu-1/holders", params={"at": at})
    assert answer.status_code == 422
    assert words in answer.json()["detail"]


def test_a_late_sample_is_followed_where_its_span_ends() -> None:
    """The sampler's thread: a sample that starts late (the snapshot slow to come, in wall
    time) stands for an interval from its own moment, and the next one waits for its end
    rather than catching up inside it (spans that overlap would count GPU-hours twice)."""
    moments: list[datetime] = []
    reads = iter(range(1_000_000))

    def clock() -> datetime:
        moments.append(datetime.now(UTC))
        return moments[-1]

    def current() -> Snapshot:
        if next(reads) == 1:
            time.sleep(0.6)  # the second sample starts 0.4 s after its deadline
        return snapshot

    snapshot = held_cluster(1)
    sampler = HistorySampler(
        None, current=current, pods=list, clock=clock, interval_s=0.2, retention_days=35
    )
    sampler.start()
    try:
        deadline = time.monotonic() + 30
        while len(moments) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sampler.stop()
    steps = [(later - earlier).total_seconds() for earlier, later in pairwise(moments)]
    assert len(steps) >= 4 and min(steps) >= 0.19, steps
