"""The chart's GPU-hour history: the file on an emptyDir by default, on a claim when asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from app.settings import Settings
from tests.chart.helm import HelmError, Rendered, render


def _volume(rendered: Rendered) -> dict[str, Any]:
    pod = rendered.find("Deployment")["spec"]["template"]["spec"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "history"]
    assert mount["mountPath"] == "/var/lib/gpu-slots-history"
    (volume,) = [v for v in pod["volumes"] if v["name"] == "history"]
    return volume


def test_history_file_is_on_an_emptydir_by_default_and_the_settings_read_it(
    pod_settings: Callable[[dict[str, str]], Settings],
) -> None:
    rendered = render()
    assert "emptyDir" in _volume(rendered)
    assert "PersistentVolumeClaim" not in rendered.kinds()
    settings = pod_settings(rendered.find("ConfigMap", "-settings")["data"])
    assert str(settings.history_path) == "/var/lib/gpu-slots-history/history.sqlite"
    assert (settings.history_interval_s, settings.history_retention_days) == (15.0, 35)
    assert settings.prometheus_url is None


def test_persistence_creates_a_claim_and_mounts_it() -> None:
    rendered = render(
        {
            "dashboard": {
                "history": {
                    "persistence": {"enabled": True, "storageClass": "local-path", "size": "5Gi"}
                }
            }
        }
    )
    claim = rendered.find("PersistentVolumeClaim", "-gpu-hours")
    assert claim["spec"]["storageClassName"] == "local-path"
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert _volume(rendered)["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # the old pod goes first: a claim attached to one node can follow the new pod elsewhere
    strategy = rendered.find("Deployment")["spec"]["strategy"]
    assert strategy["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    assert "strategy" not in render().find("Deployment")["spec"]  # an emptyDir: a surge pod


def test_existing_claim_is_mounted_and_none_created() -> None:
    rendered = render(
        {"dashboard": {"history": {"persistence": {"enabled": True, "existingClaim": "gpu-hours"}}}}
    )
    assert "PersistentVolumeClaim" not in rendered.kinds()
    assert _volume(rendered)["persistentVolumeClaim"]["claimName"] == "gpu-hours"


def test_prometheus_url_reaches_the_settings() -> None:
    url = "http://prometheus.monitoring.svc:9090"
    rendered = render({"dashboard": {"history": {"prometheusUrl": url}}})
    assert rendered.find("ConfigMap", "-settings")["data"]["GEO_MLOPS_PROMETHEUS_URL"] == url


def test_one_file_for_two_replicas_is_refused_with_the_way_out() -> None:
    """SQLite's WAL needs every process on one file on one host, which replicas are not."""
    with pytest.raises(HelmError, match="prometheusUrl"):
        render({"dashboard": {"replicas": 2, "history": {"persistence": {"enabled": True}}}})
