"""The chart's optional monitoring objects: ServiceMonitor, PrometheusRule, Grafana dashboard.

Off by default; with the monitoring values they render valid objects (the option matrix in
test_chart_render.py validates them against the operator's CRD fields), the rules are the
file promtool tests, and the dashboard is the JSON tests/monitoring checks.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from tests.chart.checks import KUBE_VERSIONS, all_errors
from tests.chart.helm import HelmError, Rendered, render
from tests.monitoring.tools import DASHBOARD_FILE, rules_text

ALL_ON: dict[str, Any] = {
    "monitoring": {
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
    }
}


def _monitoring_kinds(rendered: Rendered) -> list[str]:
    return [
        obj["kind"]
        for obj in rendered.objects
        if obj["apiVersion"].startswith("monitoring.coreos.com/")
        or obj["metadata"]["name"].endswith("-grafana-dashboard")
    ]


def test_chart_monitoring_is_off_by_default() -> None:
    assert _monitoring_kinds(render()) == []


def test_chart_monitoring_values_render_servicemonitor_rule_and_dashboard() -> None:
    rendered = render(ALL_ON)
    assert sorted(_monitoring_kinds(rendered)) == ["ConfigMap", "PrometheusRule", "ServiceMonitor"]
    for kube_version in KUBE_VERSIONS:
        assert all_errors(rendered.objects, kube_version) == []


def test_chart_servicemonitor_scrapes_the_dashboard_service() -> None:
    rendered = render(ALL_ON)
    monitor = rendered.find("ServiceMonitor")
    service = rendered.find("Service")
    labels = service["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    ports = {port["name"] for port in service["spec"]["ports"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in ports and endpoint["path"] == "/metrics"
    assert "bearerTokenSecret" not in endpoint  # no metrics token: /metrics follows reads


def test_chart_servicemonitor_sends_the_metrics_token() -> None:
    rendered = render({**ALL_ON, "auth": {"metricsToken": "t" * 32}})
    endpoint = rendered.find("ServiceMonitor")["spec"]["endpoints"][0]
    secret = rendered.find("Secret", "-metrics")
    assert endpoint["bearerTokenSecret"] == {"name": secret["metadata"]["name"], "key": "token"}
    assert secret["data"]["token"] == "dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHR0dHQ="


def test_chart_prometheusrule_is_the_tested_rules_file_with_the_service_url() -> None:
    rendered = render(ALL_ON, release_name="gpu-slots")
    spec = rendered.find("PrometheusRule")["spec"]
    namespace = rendered.find("Service")["metadata"]["namespace"]
    url = f"http://gpu-slots.{namespace}.svc:8000"
    assert spec == yaml.safe_load(rules_text(url))


def test_chart_prometheusrule_runbooks_open_the_given_dashboard_url() -> None:
    values = copy.deepcopy(ALL_ON)
    values["monitoring"]["dashboardUrl"] = "https://gpu-slots.example/"
    spec = render(values).find("PrometheusRule")["spec"]
    assert spec == yaml.safe_load(rules_text("https://gpu-slots.example"))


def test_chart_dashboard_configmap_has_the_sidecar_label_and_the_dashboard() -> None:
    values = copy.deepcopy(ALL_ON)
    values["monitoring"]["grafanaDashboard"]["namespace"] = "monitoring"
    configmap = render(values).find("ConfigMap", "-grafana-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "GPU"}
    body = json.loads(configmap["data"]["gpu-slots.json"])
    assert body == json.loads(DASHBOARD_FILE.read_text(encoding="utf-8"))


def test_chart_monitoring_schema_flags_an_unknown_field() -> None:
    monitor = copy.deepcopy(render(ALL_ON).find("ServiceMonitor"))
    monitor["spec"]["endpoint"] = []
    assert all_errors([monitor], KUBE_VERSIONS[0]) != []


def test_chart_servicemonitor_without_public_reads_needs_the_metrics_token() -> None:
    with pytest.raises(HelmError, match=r"needs auth\.metricsToken"):
        render({**ALL_ON, "auth": {"publicReads": False}})
    private = render({**ALL_ON, "auth": {"publicReads": False, "metricsToken": "t" * 32}})
    assert private.find("ServiceMonitor")["spec"]["endpoints"][0]["bearerTokenSecret"]
