"""The settings: where the change history is kept and how much of it; the plugin target."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.domain.plugin_target import PluginTarget
from app.settings import Settings


def test_settings_history_namespace_unset_returns_the_plugin_namespace() -> None:
    settings = Settings(kubernetes_device_plugin_namespace="nvidia-device-plugin")

    assert settings.history_namespace == "nvidia-device-plugin"
    assert settings.change_history_keep == 200


def test_settings_history_namespace_from_env_returns_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEO_MLOPS_CHANGE_HISTORY_NAMESPACE", "gpu-slots")
    monkeypatch.setenv("GEO_MLOPS_CHANGE_HISTORY_KEEP", "7")

    settings = Settings()

    assert settings.history_namespace == "gpu-slots"
    assert settings.change_history_keep == 7


def test_settings_history_namespace_empty_returns_the_plugin_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEO_MLOPS_CHANGE_HISTORY_NAMESPACE", "")

    assert Settings().history_namespace == "kube-system"


@pytest.mark.parametrize(
    "values",
    [
        {"change_history_namespace": "Not A Namespace"},
        {"change_history_keep": 0},
        {"change_history_keep": 10_001},
    ],
)
def test_settings_history_bad_values_are_refused(values: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Settings(**values)  # type: ignore[arg-type]


def test_settings_plugin_target_from_env_returns_one_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAME", "nvidia-device-plugin")
    monkeypatch.setenv("GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAMESPACE", "gpu-operator")

    target = Settings().plugin_target

    assert target == PluginTarget(namespace="gpu-operator", name="nvidia-device-plugin")
    assert target.ref == "gpu-operator/nvidia-device-plugin"


def test_settings_plugin_target_unset_returns_the_defaults() -> None:
    assert Settings().plugin_target == PluginTarget()
    assert PluginTarget().ref == "kube-system/nvidia-device-plugin-daemonset"


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"name": "ds", "namespace": "gpu"}, True),
        ({"name": "ds"}, True),
        ({"name": "ds", "namespace": "kube-system"}, False),
        ({"name": "other", "namespace": "gpu"}, False),
        (None, False),
    ],
)
def test_plugin_target_matches_its_daemonset_only(
    metadata: dict[str, str] | None, expected: bool
) -> None:
    assert PluginTarget(namespace="gpu", name="ds").matches({"metadata": metadata}) is expected
