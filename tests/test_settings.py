"""The settings: where the change history is kept and how much of it; the plugin target;
the secrets, each from its variable or its file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.domain.plugin_target import PluginTarget
from app.errors import ConfigError
from app.settings import SECRETS, SecretName, Settings


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


@pytest.mark.parametrize("name", SECRETS)
def test_a_secret_is_its_variable_else_its_files_first_line(
    name: SecretName, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / name
    file.write_text("from-the-file\nsecond line\n", encoding="utf-8")
    monkeypatch.setenv(f"GEO_MLOPS_{name.upper()}_FILE", str(file))
    settings = Settings()
    assert settings.secret(name) == "from-the-file"
    assert settings.has_secret(name)

    file.write_text("  rotated  \n", encoding="utf-8")  # a Secret's update, read on each use
    assert settings.secret(name) == "rotated"
    file.write_text("", encoding="utf-8")
    assert settings.secret(name) is None

    monkeypatch.setenv(f"GEO_MLOPS_{name.upper()}", "from-the-variable")
    assert Settings().secret(name) == "from-the-variable"


def test_a_secret_unset_is_none() -> None:
    settings = Settings()
    assert [settings.secret(name) for name in SECRETS] == [None] * len(SECRETS)
    assert not any(settings.has_secret(name) for name in SECRETS)


def test_an_unreadable_secret_file_stops_the_start_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "admin-token"
    monkeypatch.setenv("GEO_MLOPS_ADMIN_TOKEN_FILE", str(missing))
    expected = f"GEO_MLOPS_ADMIN_TOKEN_FILE: cannot read {missing}: No such file"
    with pytest.raises(ValidationError, match=re.escape(expected)):
        Settings()


def test_a_secret_file_gone_after_the_start_is_a_config_error_named(tmp_path: Path) -> None:
    file = tmp_path / "metrics-token"
    file.write_text("token\n", encoding="utf-8")
    settings = Settings(metrics_token_file=file)
    file.unlink()
    expected = f"GEO_MLOPS_METRICS_TOKEN_FILE: cannot read {file}: No such file"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        settings.secret("metrics_token")
