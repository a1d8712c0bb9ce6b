"""The demo's /metrics as Prometheus sees it: promtool's linter, then a real Prometheus
scraping the running dashboard and evaluating the shipped rules until an alert fires."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Stack
from tests.live import wait_for
from tests.monitoring.tools import api, exported_families, prometheus_server, rules_text, run, tool

GPU_NODES = {
    "gpu-server-1",
    "gpu-server-2",
    "gpu-server-3",
    "gpu-server-4",
    "gpu-ws-5",
    "gpu-server-6",
    "gpu-ts-7",
    "gpu-mig-8",
    "gpu-dra-9",
}


@pytest.fixture(scope="module")
def metrics_text(demo_stack: Stack) -> str:
    """/metrics once every GPU node's agent has reported."""

    def reported() -> str | None:
        text = demo_stack.client.get("/metrics").text
        nodes = set(re.findall(r'^gpu_slots_agent_report_age_seconds\{node="([^"]+)"', text, re.M))
        return text if nodes >= GPU_NODES else None

    return wait_for(reported, timeout_s=60, interval_s=0.5, what="every agent in /metrics")


def test_live_metrics_pass_promtool_check_metrics(metrics_text: str) -> None:
    output = run([tool("promtool"), "check", "metrics"], stdin=metrics_text)
    assert output.strip() == ""


def test_live_metrics_failing_plugin_node_advertises_zero(metrics_text: str) -> None:
    assert 'gpu_slots_allocatable{node="gpu-ws-5",resource="nvidia.com/gpu"} 0\n' in metrics_text
    assert 'gpu_slots_gpus{node="gpu-ws-5",role="failing"} 2\n' in metrics_text


def test_live_metrics_every_mig_resource_has_allocatable(metrics_text: str) -> None:
    resources = set(
        re.findall(
            r'^gpu_slots_allocatable\{node="gpu-mig-8",resource="([^"]+)"', metrics_text, re.M
        )
    )
    assert {"nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"} <= resources


def test_live_metrics_gpu_series_carry_dcgm_labels(metrics_text: str) -> None:
    line = next(
        line
        for line in metrics_text.splitlines()
        if line.startswith("gpu_slots_gpu_memory_used_bytes{")
    )
    assert re.search(r'UUID="GPU-[^"]+",Hostname="[^"]+"', line)


def test_live_metrics_families_are_the_documented_ones(metrics_text: str) -> None:
    live = set(re.findall(r"^# TYPE (\S+) ", metrics_text, flags=re.M))
    assert live == exported_families()
    documented = (Path(__file__).resolve().parents[2] / "docs" / "METRICS.md").read_text()
    for family in live:
        assert f"`{family}`" in documented, family


@pytest.fixture
def prometheus(demo_stack: Stack, tmp_path: Path) -> Iterator[str]:
    """A real Prometheus scraping the demo every second, with the shipped rules at `for: 0s`
    (the unit tests hold the durations; here the question is the live series)."""
    groups = yaml.safe_load(rules_text())
    for group in groups["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            rule["for"] = "0s"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(groups), encoding="utf-8")
    target = demo_stack.dashboard_url.removeprefix("http://")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules.yaml"],
        "scrape_configs": [{"job_name": "gpu-slots", "static_configs": [{"targets": [target]}]}],
    }
    with prometheus_server(config, tmp_path) as url:
        yield url


def _firing(prometheus: str, name: str) -> list[dict[str, Any]]:
    return [
        alert
        for alert in api(prometheus, "/api/v1/alerts")["alerts"]
        if alert["labels"]["alertname"] == name and alert["state"] == "firing"
    ]


def test_real_prometheus_scrapes_demo_and_plugin_failing_fires_for_gpu_ws_5(
    prometheus: str, metrics_text: str
) -> None:
    def fired() -> list[dict[str, Any]] | None:
        alerts = _firing(prometheus, "GpuSlotsPluginFailing")
        return alerts if any(a["labels"]["node"] == "gpu-ws-5" for a in alerts) else None

    alerts = wait_for(fired, timeout_s=120, interval_s=1, what="GpuSlotsPluginFailing firing")
    assert {a["labels"]["node"] for a in alerts} == {"gpu-ws-5"}
    ws5 = next(a for a in alerts if a["labels"]["code"] == "plugin-pod-not-ready")
    assert ws5["annotations"]["runbook_url"].endswith("/docs/findings#plugin-pod-not-ready")
    targets = api(prometheus, "/api/v1/targets")["activeTargets"]
    assert [t["health"] for t in targets] == ["up"]
    query = api(prometheus, "/api/v1/query", query='gpu_slots_allocatable{node="gpu-ws-5"}')
    assert [r["value"][1] for r in query["result"]] == ["0"]
