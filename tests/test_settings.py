"""The settings of the change history: where it is kept and how much of it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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
