"""The change planner: each transition, what it keeps, and every refusal."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from app.domain.changes.edits import dump_yaml
from app.domain.changes.models import (
    PREVIOUS_ANNOTATION,
    ChangePlan,
    ChangeRequest,
    ChangeWarning,
    ConfigMapAction,
    PlanRefused,
    RefusalCode,
)
from app.domain.changes.plan import current_settings, plan_change
from app.domain.changes.records import Authored, mode_record, mode_undo_request
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION, config_hash, parse_plugin_config
from app.domain.snapshot import Mode
from tests import factories as f

CM = "nvidia-device-plugin-config"
VISIBLE = "GPU-b5c7d9e1,GPU-e8f0a2b4"


def daemonset(**extra_container: Any) -> dict[str, Any]:
    """The host-split scenario's plugin DaemonSet (basic mode), with an unknown field."""
    container = {
        "name": "nvidia-device-plugin-ctr",
        "image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
        "env": [
            {"name": "FAIL_ON_INIT_ERROR", "value": "false"},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": VISIBLE},
        ],
        "resources": {"limits": {"memory": "64Mi"}},
        "volumeMounts": [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}],
        **extra_container,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset",
            "namespace": "kube-system",
            "resourceVersion": "41",
            "labels": {"app.kubernetes.io/name": "nvidia-device-plugin"},
        },
        "spec": {
            "selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
            "template": {
                "metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
                "spec": {
                    "runtimeClassName": "nvidia",
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "futureField": {"kept": True},
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "device-plugin",
                            "hostPath": {"path": "/var/lib/kubelet/device-plugins"},
                        }
                    ],
                },
            },
        },
        "status": {"numberReady": 1, "desiredNumberScheduled": 1},
    }


def configmap(text: str, *, key: str = "config.yaml", rv: str = "7") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CM, "namespace": "kube-system", "resourceVersion": rv},
        "data": {key: text},
    }


def ts(replicas: int = 4, **flags: bool) -> ChangeRequest:
    return ChangeRequest(mode="time-slicing", replicas=replicas, **flags)


def applied(plan: ChangePlan) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The objects as the cluster holds them after the plan's writes."""
    ds = copy.deepcopy(plan.daemonset)
    if plan.configmap_action is ConfigMapAction.DELETE:
        return ds, None
    return ds, copy.deepcopy(plan.configmap or plan.configmap_before)


def plugin_container(ds: dict[str, Any], index: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = ds["spec"]["template"]["spec"]["containers"][index]
    return container


def env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def test_plan_basic_to_time_slicing_wires_configmap_and_keeps_the_rest() -> None:
    plan = plan_change(daemonset(), None, ts(4), configmap_name=CM)

    assert plan.configmap_action is ConfigMapAction.CREATE
    assert plan.configmap is not None
    text = plan.configmap["data"]["config.yaml"]
    parsed = parse_plugin_config(text)
    assert (parsed.mode, parsed.replicas, parsed.resource) == (
        Mode.TIME_SLICING,
        4,
        "nvidia.com/gpu",
    )
    container = plugin_container(plan.daemonset)
    assert env(container)["CONFIG_FILE"] == "/etc/nvidia-device-plugin/config.yaml"
    assert env(container)["NVIDIA_VISIBLE_DEVICES"] == VISIBLE
    assert env(container)["FAIL_ON_INIT_ERROR"] == "false"
    assert {
        "name": "nvidia-device-plugin-config",
        "mountPath": "/etc/nvidia-device-plugin",
        "readOnly": True,
    } in container["volumeMounts"]
    pod_spec = plan.daemonset["spec"]["template"]["spec"]
    assert {"name": "nvidia-device-plugin-config", "configMap": {"name": CM}} in pod_spec["volumes"]
    assert pod_spec["futureField"] == {"kept": True}
    assert pod_spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert container["resources"] == {"limits": {"memory": "64Mi"}}
    annotations = plan.daemonset["spec"]["template"]["metadata"]["annotations"]
    assert annotations[CONFIG_HASH_ANNOTATION] == config_hash(text)
    assert plan.rolls_pods
    assert plan.after.describe() == "time-slicing x4 (nvidia.com/gpu)"
    assert plan.before.mode is Mode.BASIC
    assert plan.resource_versions == {"daemonset": "41", "configmap": None}
    assert "status" not in plan.daemonset


def test_plan_basic_to_time_slicing_changes_only_the_wiring() -> None:
    before = daemonset()
    plan = plan_change(before, None, ts(4), configmap_name=CM)
    after = copy.deepcopy(plan.daemonset)
    after["spec"]["template"].pop("metadata")
    before["spec"]["template"].pop("metadata")
    container = plugin_container(after)
    container["env"] = [e for e in container["env"] if e["name"] != "CONFIG_FILE"]
    container["volumeMounts"] = container["volumeMounts"][:1]
    after["spec"]["template"]["spec"]["volumes"] = after["spec"]["template"]["spec"]["volumes"][:1]
    before.pop("status")
    assert after == before  # the DaemonSet's own metadata too: no annotation of ours on it


def test_plan_picks_the_plugin_container_by_image_not_position() -> None:
    ds = daemonset()
    sidecar = {"name": "exporter", "image": "busybox:1.36", "env": [{"name": "X", "value": "1"}]}
    ds["spec"]["template"]["spec"]["containers"].insert(0, sidecar)

    plan = plan_change(ds, None, ts(4), configmap_name=CM)

    assert plugin_container(plan.daemonset, 0) == sidecar
    assert "CONFIG_FILE" in env(plugin_container(plan.daemonset, 1))


def test_plan_replicas_change_updates_configmap_and_rolls_pods_by_hash() -> None:
    ds, cm = applied(plan_change(daemonset(), None, ts(4), configmap_name=CM))

    plan = plan_change(ds, cm, ts(8), configmap_name=CM)

    assert plan.configmap_action is ConfigMapAction.UPDATE
    assert plan.configmap is not None
    text = plan.configmap["data"]["config.yaml"]
    assert parse_plugin_config(text).replicas == 8
    assert plan.rolls_pods
    old_template = copy.deepcopy(ds["spec"]["template"])
    new_template = copy.deepcopy(plan.daemonset["spec"]["template"])
    assert new_template["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] == config_hash(text)
    assert old_template["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] != config_hash(text)
    old_template["metadata"].pop("annotations")
    new_template["metadata"].pop("annotations")
    assert new_template == old_template
    assert plan.before.replicas == 4 and plan.after.replicas == 8


def test_plan_same_settings_again_is_refused_as_no_change() -> None:
    ds, cm = applied(plan_change(daemonset(), None, ts(4), configmap_name=CM))

    with pytest.raises(PlanRefused) as refused:
        plan_change(ds, cm, ts(4), configmap_name=CM)

    assert refused.value.code is RefusalCode.NO_CHANGE
    settings = refused.value.params["settings"]
    assert isinstance(settings, str) and settings.startswith("time-slicing x4")


def test_plan_basic_when_basic_is_refused_as_no_change() -> None:
    with pytest.raises(PlanRefused) as refused:
        plan_change(daemonset(), None, ChangeRequest(mode="basic"), configmap_name=CM)
    assert refused.value.code is RefusalCode.NO_CHANGE


@pytest.mark.parametrize("delete", [False, True])
def test_plan_time_slicing_to_basic_unwires_and_optionally_deletes(delete: bool) -> None:
    original = daemonset()
    ds, cm = applied(plan_change(original, None, ts(4), configmap_name=CM))

    plan = plan_change(
        ds, cm, ChangeRequest(mode="basic", delete_configmap=delete), configmap_name=CM
    )

    assert plan.configmap_action is (ConfigMapAction.DELETE if delete else ConfigMapAction.KEEP)
    assert plan.configmap is None
    assert plan.daemonset["spec"]["template"] == original["spec"]["template"]
    assert plan.after.mode is Mode.BASIC
    assert plan.rolls_pods


def test_plan_delete_leftover_configmap_while_basic_is_a_change() -> None:
    plan = plan_change(
        daemonset(),
        configmap("version: v1\n"),
        ChangeRequest(mode="basic", delete_configmap=True),
        configmap_name=CM,
    )
    assert plan.configmap_action is ConfigMapAction.DELETE
    assert not plan.rolls_pods


@pytest.mark.parametrize(
    ("rename", "resource"), [(True, "nvidia.com/gpu.shared"), (False, "nvidia.com/gpu")]
)
def test_plan_rename_switch_moves_the_resource(rename: bool, resource: str) -> None:
    ds, cm = applied(
        plan_change(daemonset(), None, ts(4, rename_by_default=not rename), configmap_name=CM)
    )

    plan = plan_change(ds, cm, ts(4, rename_by_default=rename), configmap_name=CM)

    assert plan.after.resource == resource
    assert plan.after.rename_by_default is rename
    assert plan.rolls_pods


def test_plan_keeps_other_keys_of_the_existing_config() -> None:
    text = (
        "version: v1\nflags:\n  migStrategy: none\n  failOnInitError: true\n"
        "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
        "    - name: nvidia.com/mig-1g.10gb\n      replicas: 3\n"
    )
    ds = daemonset()
    container = plugin_container(ds)
    container["env"].append({"name": "CONFIG_FILE", "value": "/cfg/config.yaml"})
    container["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": CM}})
    cm = configmap(text)
    cm["data"]["other.yaml"] = "version: v1\n"

    plan = plan_change(ds, cm, ts(6, fail_requests_greater_than_one=True), configmap_name=CM)

    assert plan.configmap is not None
    assert plan.configmap["data"]["other.yaml"] == "version: v1\n"
    new = yaml.safe_load(plan.configmap["data"]["config.yaml"])
    assert new["flags"] == {"migStrategy": "none", "failOnInitError": True}
    block = new["sharing"]["timeSlicing"]
    assert block["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 6},
        {"name": "nvidia.com/mig-1g.10gb", "replicas": 3},
    ]
    assert block["failRequestsGreaterThanOne"] is True
    assert env(plugin_container(plan.daemonset))["CONFIG_FILE"] == "/cfg/config.yaml"
    assert plan.after.fail_requests_greater_than_one


def test_plan_rewrites_every_entry_of_the_gpu_resource_so_the_plugin_gets_the_asked_count() -> None:
    text = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 2\n"
        "    - name: gpu\n      replicas: 8\n"
        "    - name: nvidia.com/mig-1g.10gb\n      replicas: 3\n"
    )
    ds = daemonset()
    container = plugin_container(ds)
    container["env"].append({"name": "CONFIG_FILE", "value": "/cfg/config.yaml"})
    container["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": CM}})

    plan = plan_change(ds, configmap(text), ts(3), configmap_name=CM)

    assert plan.configmap is not None
    new = yaml.safe_load(plan.configmap["data"]["config.yaml"])
    assert new["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 3},
        {"name": "nvidia.com/mig-1g.10gb", "replicas": 3},
    ]
    assert plan.after.replicas == 3
    assert (
        ChangeWarning("time-slicing-entry-merged", {"name": "gpu", "replicas": "8"})
        in plan.warnings
    )


def test_plan_removes_an_mps_block_with_a_warning() -> None:
    text = "sharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
    ds = daemonset(
        env=[
            {"name": "CONFIG_FILE", "value": "/cfg/config.yaml"},
            {"name": "MPS_ROOT", "value": "/run/nvidia/mps"},
        ]
    )
    plugin_container(ds)["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": CM}})

    plan = plan_change(ds, configmap(text), ts(4), configmap_name=CM)

    assert plan.before.mode is Mode.MPS
    assert plan.after.mode is Mode.TIME_SLICING
    assert ChangeWarning("mps-removed") in plan.warnings


def test_plan_configmap_mounted_without_config_file_reuses_the_mount() -> None:
    ds = daemonset()
    plugin_container(ds)["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": CM}})

    plan = plan_change(ds, configmap("version: v1\n"), ts(4), configmap_name=CM)

    container = plugin_container(plan.daemonset)
    assert env(container)["CONFIG_FILE"] == "/cfg/config.yaml"
    assert [m["name"] for m in container["volumeMounts"]] == ["device-plugin", "cfg"]
    assert len(plan.daemonset["spec"]["template"]["spec"]["volumes"]) == 2


def test_plan_invalid_existing_config_is_replaced_with_a_warning() -> None:
    ds = daemonset(env=[{"name": "CONFIG_FILE", "value": "/cfg/config.yaml"}])
    plugin_container(ds)["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": CM}})

    plan = plan_change(ds, configmap("sharing: [unclosed\n"), ts(3), configmap_name=CM)

    assert plan.before.error is not None
    assert plan.after.replicas == 3
    assert ChangeWarning("config-not-yaml-replaced") in plan.warnings


def test_plan_operator_managed_daemonset_is_refused() -> None:
    owned = daemonset()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"}
    ]
    labelled = daemonset()
    labelled["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "gpu-operator"
    for ds in (owned, labelled):
        with pytest.raises(PlanRefused) as refused:
            plan_change(ds, None, ts(4), configmap_name=CM)
        assert refused.value.code is RefusalCode.OPERATOR_MANAGED
        assert refused.value.why == "operator-managed"


def test_plan_missing_daemonset_is_refused() -> None:
    with pytest.raises(PlanRefused) as refused:
        plan_change(None, None, ts(4), configmap_name=CM)
    assert refused.value.code is RefusalCode.DAEMONSET_NOT_FOUND


@pytest.mark.parametrize("replicas", [0, 1, 65, 1000])
def test_plan_replicas_out_of_range_is_refused(replicas: int) -> None:
    with pytest.raises(PlanRefused) as refused:
        plan_change(daemonset(), None, ts(replicas), configmap_name=CM)
    assert refused.value.code is RefusalCode.OUT_OF_RANGE
    assert refused.value.params == {"min": 2, "max": 64, "got": replicas}


def test_plan_delete_configmap_with_time_slicing_is_refused() -> None:
    with pytest.raises(PlanRefused) as refused:
        plan_change(daemonset(), None, ts(4, delete_configmap=True), configmap_name=CM)
    assert refused.value.code is RefusalCode.OUT_OF_RANGE


def test_plan_config_file_naming_another_key_is_refused() -> None:
    ds = daemonset(env=[{"name": "CONFIG_FILE", "value": "/cfg/any.yaml"}])
    plugin_container(ds)["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": CM}})

    with pytest.raises(PlanRefused) as refused:
        plan_change(ds, configmap("version: v1\n"), ts(4), configmap_name=CM)

    assert refused.value.code is RefusalCode.CONFIG_KEY_MISMATCH
    assert (refused.value.params["key"], refused.value.params["keys"]) == (
        "any.yaml",
        "config.yaml",
    )


def test_plan_config_file_in_another_configmap_is_refused() -> None:
    ds = daemonset(env=[{"name": "CONFIG_FILE", "value": "/cfg/config.yaml"}])
    plugin_container(ds)["volumeMounts"].append({"name": "cfg", "mountPath": "/cfg"})
    ds["spec"]["template"]["spec"]["volumes"].append({"name": "cfg", "configMap": {"name": "mine"}})

    with pytest.raises(PlanRefused) as refused:
        plan_change(ds, None, ChangeRequest(mode="basic"), configmap_name=CM)

    assert refused.value.code is RefusalCode.CONFIG_ELSEWHERE


def test_plan_config_manager_sidecar_is_refused() -> None:
    ds = daemonset(env=[{"name": "CONFIG_FILE", "value": "/config/config.yaml"}])
    plugin_container(ds)["volumeMounts"].append({"name": "config", "mountPath": "/config"})
    pod_spec = ds["spec"]["template"]["spec"]
    pod_spec["containers"].append(
        {
            "name": "config-manager",
            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
            "command": ["config-manager"],
            "env": [
                {"name": "CONFIG_FILE_DST", "value": "/config/config.yaml"},
                {"name": "CONFIG_FILE_SRCDIR", "value": "/available-configs"},
            ],
            "volumeMounts": [
                {"name": "config", "mountPath": "/config"},
                {"name": "available", "mountPath": "/available-configs"},
            ],
        }
    )
    pod_spec["volumes"] += [
        {"name": "config", "emptyDir": {}},
        {"name": "available", "configMap": {"name": CM}},
    ]

    with pytest.raises(PlanRefused) as refused:
        plan_change(ds, None, ts(4), configmap_name=CM)

    assert refused.value.code is RefusalCode.CONFIG_PER_NODE


def test_plan_deleting_a_configmap_another_container_mounts_is_refused() -> None:
    ds, cm = applied(plan_change(daemonset(), None, ts(4), configmap_name=CM))
    ds["spec"]["template"]["spec"]["containers"].append(
        {
            "name": "gfd",
            "image": "gfd:1",
            "volumeMounts": [{"name": "nvidia-device-plugin-config", "mountPath": "/c"}],
        }
    )

    with pytest.raises(PlanRefused) as refused:
        plan_change(ds, cm, ChangeRequest(mode="basic", delete_configmap=True), configmap_name=CM)

    assert refused.value.code is RefusalCode.CONFIGMAP_IN_USE


def undone(plan: ChangePlan) -> ChangePlan:
    """The plan that undoes `plan` once written: its record's settings before, planned anew."""
    ds, cm = applied(plan)
    record = mode_record(plan, Authored("c-1", "alice", f.NOW))
    return plan_change(ds, cm, mode_undo_request(record), configmap_name=CM)


def test_undoing_a_switch_restores_the_basic_template() -> None:
    original = daemonset()

    plan = undone(plan_change(original, None, ts(4), configmap_name=CM))

    assert plan.configmap_action is ConfigMapAction.KEEP  # the undo deletes no ConfigMap
    assert plan.daemonset["spec"]["template"] == original["spec"]["template"]
    assert plan.after.mode is Mode.BASIC


def test_undoing_a_replicas_change_restores_the_old_text_and_rolls() -> None:
    ds, cm = applied(plan_change(daemonset(), None, ts(4), configmap_name=CM))
    assert cm is not None
    four = cm["data"]["config.yaml"]

    plan = undone(plan_change(ds, cm, ts(8), configmap_name=CM))

    assert plan.configmap_action is ConfigMapAction.UPDATE
    assert plan.configmap is not None and plan.configmap["data"]["config.yaml"] == four
    assert plan.after.replicas == 4
    assert plan.daemonset["spec"]["template"]["metadata"]["annotations"][
        CONFIG_HASH_ANNOTATION
    ] == (config_hash(four))
    assert undone(plan).after.replicas == 8  # undoing the undo: back to 8


def test_a_daemonset_left_with_the_old_previous_config_annotation_keeps_it() -> None:
    """Earlier versions kept an undo in this annotation; nothing reads or writes it now."""
    ds = daemonset()
    ds["metadata"]["annotations"] = {PREVIOUS_ANNOTATION: '{"version":1}'}

    plan = plan_change(ds, None, ts(4), configmap_name=CM)

    assert plan.daemonset["metadata"]["annotations"] == {PREVIOUS_ANNOTATION: '{"version":1}'}


def test_current_settings_of_a_time_sliced_daemonset() -> None:
    ds, cm = applied(
        plan_change(daemonset(), None, ts(5, rename_by_default=True), configmap_name=CM)
    )
    settings = current_settings(ds, cm)
    assert settings.describe() == "time-slicing x5 (nvidia.com/gpu.shared, renameByDefault)"


def test_dump_yaml_writes_multiline_strings_as_blocks() -> None:
    text = dump_yaml({"data": {"config.yaml": "version: v1\nflags: {}\n"}})
    assert "config.yaml: |" in text
    assert yaml.safe_load(text) == {"data": {"config.yaml": "version: v1\nflags: {}\n"}}
