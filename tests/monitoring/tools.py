"""The real Prometheus tools (Debian's `prometheus` package, which `make tools` installs)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

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
    text = render_metrics(snapshot)
    return frozenset(re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE))


def metric_names(expression: str) -> set[str]:
    """The gpu_slots_* metric names a PromQL expression reads."""
    return set(METRIC_NAME.findall(expression))
