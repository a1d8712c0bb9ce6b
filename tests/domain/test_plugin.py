"""Reading the plugin DaemonSet and following CONFIG_FILE to a ConfigMap key."""

from __future__ import annotations

import pytest

from app.domain.plugin.daemonset import (
    ConfigManagerRef,
    StaticConfigRef,
    UnresolvedConfigRef,
    parse_version,
    read_plugin_spec,
)
from app.domain.plugin.effective import resolve_config
from app.domain.snapshot import Mode
from app.i18n.coded import upstream_text
from tests import factories as f
from tests.domain.worlds import config_manager_daemonset


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.18.2", (0, 18, 2)),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.4-ubi9", (0, 17, 4)),
        ("nvidia/k8s-device-plugin:0.15.0-ubi8", (0, 15, 0)),
        ("registry.local:5000/k8s-device-plugin:v0.19.3", (0, 19, 3)),
        ("nvcr.io/nvidia/k8s-device-plugin:latest", None),
        ("registry.local:5000/k8s-device-plugin", None),
        ("nvcr.io/nvidia/k8s-device-plugin@sha256:abcd", None),
    ],
)
def test_parse_version_reads_image_tag(image: str, version: tuple[int, int, int] | None) -> None:
    assert parse_version(image) == version


def test_read_plugin_spec_reads_env_privileged_runtime_class_and_status() -> None:
    ds = f.plugin_daemonset(
        env={"NVIDIA_VISIBLE_DEVICES": "GPU-a", "FAIL_ON_INIT_ERROR": "false"},
        privileged=True,
        runtime_class=None,
        ready=2,
        desired=3,
    )
    spec = read_plugin_spec(ds)
    assert spec.visible_devices == "GPU-a"
    assert spec.env["FAIL_ON_INIT_ERROR"] == "false"
    assert spec.privileged is True
    assert spec.runtime_class_name is None
    assert (spec.ready, spec.desired) == (2, 3)
    assert spec.container == "nvidia-device-plugin-ctr"
    assert spec.operator_managed is False


@pytest.mark.parametrize(
    "metadata",
    [
        {"ownerReferences": [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy"}]},
        {"labels": {"app.kubernetes.io/managed-by": "gpu-operator"}},
        {"labels": {"helm.sh/chart": "gpu-operator-v26.3.3"}},
    ],
)
def test_read_plugin_spec_operator_markers_mark_managed(metadata: dict[str, object]) -> None:
    ds = f.plugin_daemonset()
    ds["metadata"].update(metadata)
    assert read_plugin_spec(ds).operator_managed is True


def test_read_plugin_spec_config_file_in_mounted_directory_resolves_key() -> None:
    ds = f.plugin_daemonset(configmap="cm", config_file="/config/config.yaml")
    assert read_plugin_spec(ds).config_ref == StaticConfigRef("cm", "config.yaml")


def test_read_plugin_spec_sub_path_mount_resolves_key() -> None:
    ds = f.plugin_daemonset(
        configmap="cm", config_file="/etc/nvidia/config.yaml", mount_path="/etc/nvidia/config.yaml"
    )
    ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][1]["subPath"] = "ts.yaml"
    assert read_plugin_spec(ds).config_ref == StaticConfigRef("cm", "ts.yaml")


def test_read_plugin_spec_items_projection_maps_path_to_key() -> None:
    ds = f.plugin_daemonset(configmap="cm", config_file="/config/plugin.yaml")
    ds["spec"]["template"]["spec"]["volumes"][-1]["configMap"]["items"] = [
        {"key": "any", "path": "plugin.yaml"}
    ]
    assert read_plugin_spec(ds).config_ref == StaticConfigRef("cm", "any")


def test_read_plugin_spec_config_file_without_mount_is_unresolved() -> None:
    ref = read_plugin_spec(f.plugin_daemonset(config_file="/nowhere/config.yaml")).config_ref
    assert isinstance(ref, UnresolvedConfigRef)


def test_read_plugin_spec_args_beat_env() -> None:
    ds = f.plugin_daemonset(configmap="cm", config_file="/config/a.yaml")
    ds["spec"]["template"]["spec"]["containers"][0]["args"] = ["--config-file=/config/b.yaml"]
    assert read_plugin_spec(ds).config_ref == StaticConfigRef("cm", "b.yaml")


def test_read_plugin_spec_config_manager_sidecar_gives_per_node_ref() -> None:
    ref = read_plugin_spec(config_manager_daemonset(default_config="ts4")).config_ref
    assert ref == ConfigManagerRef(
        configmap=f.CONFIGMAP, default_config="ts4", fallback_strategies=("empty",)
    )


@pytest.mark.parametrize(
    ("labels", "default", "fallback", "data", "mode", "replicas", "error"),
    [
        (
            {"nvidia.com/device-plugin.config": "ts8"},
            "",
            "empty",
            {"ts8": f.time_slicing_yaml(8)},
            Mode.TIME_SLICING,
            8,
            None,
        ),
        ({}, "ts2", "empty", {"ts2": f.time_slicing_yaml(2)}, Mode.TIME_SLICING, 2, None),
        (
            {},
            "",
            "named,single",
            {"default": f.time_slicing_yaml(3), "x": ""},
            Mode.TIME_SLICING,
            3,
            None,
        ),
        ({}, "", "named,single", {"only": f.time_slicing_yaml(5)}, Mode.TIME_SLICING, 5, None),
        ({}, "", "empty", {"ts8": f.time_slicing_yaml(8)}, Mode.BASIC, 1, None),
        ({}, "", "named,single", {"a": "", "b": ""}, None, None, "config-key-missing"),
        (
            {"nvidia.com/device-plugin.config": "nope"},
            "",
            "empty",
            {"a": ""},
            None,
            None,
            "config-label-unknown",
        ),
        ({}, "gone", "empty", {"a": ""}, None, None, "config-key-missing"),
    ],
    ids=["label", "default", "named", "single", "empty", "no-fallback", "bad-label", "bad-default"],
)
def test_resolve_config_config_manager_order(
    labels: dict[str, str],
    default: str,
    fallback: str,
    data: dict[str, str],
    mode: Mode | None,
    replicas: int | None,
    error: str | None,
) -> None:
    spec = read_plugin_spec(config_manager_daemonset(default_config=default, fallback=fallback))
    result = resolve_config(spec, {f.CONFIGMAP: f.configmap(data)}, node_labels=labels)
    assert result.error_code == error
    if mode is None:
        assert result.config is None
    else:
        assert result.config is not None
        assert (result.config.mode, result.config.replicas) == (mode, replicas)


def test_resolve_config_missing_configmap_is_key_missing() -> None:
    spec = read_plugin_spec(f.plugin_daemonset(configmap="cm", config_file="/config/c.yaml"))
    result = resolve_config(spec, {})
    assert result.error_code == "config-key-missing"
    assert result.error is not None and "not found" in upstream_text(result.error)
    assert result.source == "configmap/cm#c.yaml"


def test_resolve_config_missing_configmap_per_node_names_the_label() -> None:
    spec = read_plugin_spec(config_manager_daemonset(default_config="", fallback="named"))
    result = resolve_config(spec, {}, node_labels={})
    assert result.error_code == "config-key-missing"
    assert result.error is not None and "not found" in upstream_text(result.error)
    assert result.source == f"configmap/{f.CONFIGMAP} (label nvidia.com/device-plugin.config)"
