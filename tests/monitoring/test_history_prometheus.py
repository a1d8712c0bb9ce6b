"""The GPU-hour history from a real Prometheus agrees with the file, within one sample.

One run of the demo keeps its history in a file (a sample a second) while a real Prometheus
scrapes its /metrics every second; a second dashboard with GEO_MLOPS_PROMETHEUS_URL answers
the same questions from Prometheus alone."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.web.app import create_app
from tests.conftest import Stack, stack_settings
from tests.live import wait_for
from tests.monitoring.tools import api, prometheus_server
from tests.web.fakes import FakeSource

INTERVAL_S = 1
WINDOW_S = 20


def _showback(client: Any, start: datetime, end: datetime, by: str) -> dict[str, Any]:
    params = {"from": start.isoformat(), "to": end.isoformat(), "by": by}
    answer = client.get("/api/v1/showback", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_prometheus_and_the_file_agree_within_one_sample(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack(
        "demo", history_interval_s=INTERVAL_S, history_path=tmp_path / "history.sqlite"
    )
    target = stack.dashboard_url.removeprefix("http://")
    config = {
        "global": {"scrape_interval": f"{INTERVAL_S}s"},
        "scrape_configs": [{"job_name": "gpu-slots", "static_configs": [{"targets": [target]}]}],
    }
    (tmp_path / "prometheus").mkdir()
    with prometheus_server(config, tmp_path / "prometheus") as prometheus:

        def scraped() -> bool:
            found = api(prometheus, "/api/v1/query", query="sum(gpu_slots_held_gpus)")
            return bool(found["result"]) and float(found["result"][0]["value"][1]) > 0

        wait_for(scraped, timeout_s=60, interval_s=0.5, what="history series in Prometheus")
        start = datetime.now(UTC) + timedelta(seconds=2)
        end = start + timedelta(seconds=WINDOW_S)
        # both sources need the whole window behind them: real time, as Prometheus scrapes
        wait_for(
            lambda: time.time() > end.timestamp() + 2 * INTERVAL_S,
            timeout_s=WINDOW_S + 30,
            interval_s=0.5,
            what="the window to pass",
        )
        reader = create_app(
            stack_settings(prometheus_url=prometheus, history_interval_s=INTERVAL_S),
            source=FakeSource(),
        )
        with TestClient(reader) as from_prometheus:
            for by in ("namespace", "node"):
                file_rows = _showback(stack.client, start, end, by)
                prom_rows = _showback(from_prometheus, start, end, by)
                _agree(file_rows, prom_rows, by=by)
            node = "gpu-server-1"
            at = {"at": (start + timedelta(seconds=WINDOW_S / 2)).isoformat()}
            file_holders = stack.client.get(f"/api/v1/nodes/{node}/holders", params=at).json()
            prom_holders = from_prometheus.get(f"/api/v1/nodes/{node}/holders", params=at).json()
            timelines = [
                _timeline_pods(client.get(f"/nodes/{node}/history").text)
                for client in (stack.client, from_prometheus)
            ]
    assert (file_holders["engine"], prom_holders["engine"]) == ("sqlite", "prometheus")
    assert file_holders["gpus"], "the demo's gpu-server-1 has GPUs"
    assert file_holders["gpus"] == prom_holders["gpus"]
    assert timelines[0], "gpu-server-1's pods held GPUs over the window"
    assert timelines[0] == timelines[1]


def _timeline_pods(page: str) -> list[str]:
    """The pods the node's timeline lists, GPU by GPU."""
    return re.findall(r'data-testid="timeline-hold"><th scope="row">([^<]+)</th>', page)


def _agree(from_file: dict[str, Any], from_prometheus: dict[str, Any], *, by: str) -> None:
    """Each row and total within one sample: the row's share held for INTERVAL_S."""
    hours = WINDOW_S / 3600
    one_sample = INTERVAL_S / 3600
    file_rows = {row["key"]: row["gpuHours"] for row in from_file["rows"]}
    prom_rows = {row["key"]: row["gpuHours"] for row in from_prometheus["rows"]}
    assert set(file_rows) == set(prom_rows), by
    assert sum(file_rows.values()) > 0
    for key, gpu_hours in file_rows.items():
        share = max(gpu_hours, prom_rows[key]) / (hours - one_sample)  # GPUs held
        assert abs(gpu_hours - prom_rows[key]) <= share * one_sample * 1.01 + 1e-6, (by, key)
    for total in ("gpuHours", "physicalGpuHours"):
        a, b = from_file["totals"][total], from_prometheus["totals"][total]
        gpus = max(a, b) / (hours - one_sample)
        assert abs(a - b) <= gpus * one_sample * 1.01 + 1e-6, total
