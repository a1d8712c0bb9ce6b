"""The Grafana dashboard the chart ships: a well-formed dashboard whose every query is valid
PromQL (promtool parses it) and names only metrics /metrics exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.monitoring.tools import dashboard, exported_families, metric_names, run, tool

PANEL_TYPES = {"timeseries", "stat"}
# Grafana's variables, as they expand at query time.
VARIABLES = {"$node": ".*", "${datasource}": ""}


def _targets() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(panel, target) for panel in dashboard()["panels"] for target in panel["targets"]]


def _expanded(expr: str) -> str:
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def test_dashboard_has_the_fields_grafana_imports() -> None:
    board = dashboard()
    assert (board["uid"], board["title"]) == ("gpu-slots", "GPU Slots")
    assert isinstance(board["schemaVersion"], int)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert metric_names(variables["node"]["definition"]) <= exported_families()


def test_dashboard_panels_are_well_formed_and_fit_the_grid() -> None:
    panels = dashboard()["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        assert panel["type"] in PANEL_TYPES, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(set(refs)) == len(refs), panel["title"]


def test_dashboard_shows_what_the_issue_asks_for() -> None:
    titles = {panel["title"] for panel in dashboard()["panels"]}
    for wanted in (
        "GPU utilization per GPU",
        "GPU memory used per GPU",
        "Slots held by node",
        "Slots free by node",
        "Slots held by namespace",
        "Idle held slots (pod runs nothing on the GPU)",
    ):
        assert wanted in titles


def test_dashboard_every_query_names_exported_metrics() -> None:
    exported = exported_families()
    for panel, target in _targets():
        names = metric_names(target["expr"])
        assert names, (panel["title"], target["expr"])
        assert names <= exported, (panel["title"], names - exported)


def test_dashboard_every_query_is_valid_promql(tmp_path: Path) -> None:
    """promtool parses each query, variables expanded, as a recording rule."""
    rules = [
        {
            "record": f"dashboard:panel{panel['id']}:{target['refId']}",
            "expr": _expanded(target["expr"]),
        }
        for panel, target in _targets()
    ]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    output = run([tool("promtool"), "check", "rules", str(path)])
    assert f"SUCCESS: {len(rules)} rules found" in output
