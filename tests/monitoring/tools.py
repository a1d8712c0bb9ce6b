"""The real Prometheus tools (Debian's `prometheus` package, which `make tools` installs)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.live import wait_for

ROOT = Path(__file__).resolve().parents[2]
RULES_FILE = ROOT / "chart" / "files" / "gpu-slots.rules.yaml"
DASHBOARD_FILE = ROOT / "chart" / "files" / "gpu-slots-dashboard.json"
RULE_TESTS = Path(__file__).resolve().parent / "rules_test.yaml"
# What the chart puts in place of DASHBOARD_URL when no URL is given (tests render it so).
TEST_DASHBOARD_URL = "http://gpu-slots.monitoring.svc:8000"
METRIC_NAME = re.compile(r"\b(gpu_slots_[a-z0-9_]+)")


def tool(name: str) -> str:
    """The path of promtool or prometheus; skips the test when the package is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} missing: `make tools` installs Debian's prometheus package as root")
    return path


def run(argv: list[str], *, stdin: str | None = None, cwd: Path | None = None) -> str:
    """Run a tool; fail the test with its whole output when it exits non-zero."""
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{output}"
    return output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _log_tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-4000:]


@contextmanager
def prometheus_server(config: dict[str, Any], folder: Path) -> Iterator[str]:
    """A real Prometheus on a free port with `config` (files it names live in `folder`),
    yielded only once its readiness endpoint answers 200: while it starts it answers
    "503 Service Unavailable" on every API, and a test that read that as JSON failed on
    fresh machines. Stopped by its PID on exit."""
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    url = f"http://127.0.0.1:{_free_port()}"
    log_path = folder / "prometheus.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                tool("prometheus"),
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address={url.removeprefix('http://')}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=folder,
        )
        try:

            def ready() -> bool:
                exited = process.poll()
                if exited is not None:
                    raise AssertionError(
                        f"prometheus exited {exited} before it was ready:\n{_log_tail(log_path)}"
                    )
                try:
                    return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
                except httpx.TransportError:
                    return False

            wait_for(ready, timeout_s=60, interval_s=0.2, what="prometheus /-/ready")
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def api(prometheus: str, path: str, **params: str) -> Any:
    """The `data` of a Prometheus API answer; any other answer fails the test with its
    status and body (never parsed blindly)."""
    answer = httpx.get(f"{prometheus}{path}", params=params, timeout=5)
    assert answer.status_code == 200, f"{path}: {answer.status_code} {answer.text[:2000]}"
    body = answer.json()
    assert body.get("status") == "success", f"{path}: {answer.text[:2000]}"
    return body["data"]


def rules_text(dashboard_url: str = TEST_DASHBOARD_URL) -> str:
    """The shipped rules file as the chart renders it (the runbook links' base filled in)."""
    return RULES_FILE.read_text(encoding="utf-8").replace("DASHBOARD_URL", dashboard_url)


def rules() -> list[dict[str, Any]]:
    """Every rule of every group of the rules file."""
    groups = yaml.safe_load(rules_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def dashboard() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text(encoding="utf-8"))
    return body


@cache
def exported_families() -> frozenset[str]:
    """Every family /metrics writes (each family's HELP and TYPE come even without samples)."""
    from datetime import UTC, datetime

    from app.domain.dra_models import EMPTY_SUMMARY
    from app.domain.snapshot import Mode, PluginState, Snapshot, Totals
    from app.web.views.metrics import render_metrics
    from app.web.views.metrics_history import render_history

    plugin = PluginState(
        name="nvidia-device-plugin-daemonset",
        namespace="kube-system",
        found=True,
        image=None,
        version=None,
        ready=0,
        desired=0,
        config_source=None,
        operator_managed=False,
        mode=Mode.BASIC,
        replicas=1,
        resource="nvidia.com/gpu",
        rename_by_default=False,
        fail_requests_greater_than_one=False,
    )
    totals = Totals(
        physical_gpus=0, visible_gpus=0, host_gpus=0, allocatable=0, requested=0, free=0
    )
    snapshot = Snapshot(
        generated_at=datetime(2026, 1, 1, tzinfo=UTC),
        plugin=plugin,
        totals=totals,
        nodes=[],
        findings=[],
        dra=EMPTY_SUMMARY,
    )
    text = render_metrics(snapshot) + render_history(None)
    return frozenset(re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE))


def metric_names(expression: str) -> set[str]:
    """The gpu_slots_* metric names a PromQL expression reads."""
    return set(METRIC_NAME.findall(expression))
