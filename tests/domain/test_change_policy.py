"""The change planner: v0.20 sharedDevicesAllocationPolicy checked before a write; DRA only."""

from __future__ import annotations

import pytest
import yaml

from app.domain.changes.models import ChangeRequest, PlanRefused, RefusalCode
from app.domain.changes.plan import plan_change
from app.domain.dra_models import DraInstall
from tests import factories as f

V020 = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
NAME = f.CONFIGMAP


def test_change_policy_packed_is_written_under_flags_plugin() -> None:
    request = ChangeRequest(mode="time-slicing", replicas=4, allocation_policy="packed")
    plan = plan_change(f.plugin_daemonset(image=V020), None, request, configmap_name=NAME)
    assert plan.configmap is not None
    config = yaml.safe_load(plan.configmap["data"]["config.yaml"])
    assert config["flags"]["plugin"] == {"sharedDevicesAllocationPolicy": "packed"}


@pytest.mark.parametrize("policy", ["spread", "tight", "Packed"])
def test_change_policy_invalid_value_is_refused_before_a_write(policy: str) -> None:
    request = ChangeRequest(mode="time-slicing", replicas=4, allocation_policy=policy)
    with pytest.raises(PlanRefused) as refused:
        plan_change(f.plugin_daemonset(image=V020), None, request, configmap_name=NAME)
    assert refused.value.code is RefusalCode.OUT_OF_RANGE
    assert refused.value.why == "policy-unknown"
    assert refused.value.params == {"policies": "distributed, packed", "got": repr(policy)}


def test_change_policy_on_a_plugin_before_v020_is_refused() -> None:
    request = ChangeRequest(mode="time-slicing", replicas=4, allocation_policy="packed")
    with pytest.raises(PlanRefused) as refused:
        plan_change(f.plugin_daemonset(), None, request, configmap_name=NAME)
    assert refused.value.why == "policy-too-old" and refused.value.params["version"]


def test_change_policy_dra_only_cluster_says_there_is_no_configmap_to_change() -> None:
    install = DraInstall(
        daemonset="gpu-operator/nvidia-dra-driver-kubelet-plugin",
        managed_by="gpu-operator",
        device_classes=["gpu.nvidia.com"],
        extended_resources=[],
        device_plugin=False,
    )
    request = ChangeRequest(mode="time-slicing", replicas=4)
    with pytest.raises(PlanRefused) as refused:
        plan_change(None, None, request, configmap_name=NAME, dra_install=install)
    assert refused.value.code is RefusalCode.DRA_ONLY
    assert refused.value.why == "dra-only.gpu-operator"
    assert refused.value.params == {"daemonset": "gpu-operator/nvidia-dra-driver-kubelet-plugin"}
