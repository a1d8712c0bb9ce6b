"""Per-node sharing on a config-manager install: a ConfigMap key and the node label."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.domain.changes.models import ChangeWarning, PlanRefused, RefusalCode
from app.domain.changes.split import plan_split
from app.domain.changes.split_models import NodeGpu, SplitPlan, SplitRequest
from app.domain.cluster import Manifest
from tests import factories as f

SCENARIO = Path(__file__).parents[2] / "app/simulator/world/scenarios/clusters.yaml"
LABEL = "nvidia.com/device-plugin.config"
UUIDS = [f.gpu_uuid("gpu-ts-3", i) for i in range(2)]
GPUS = [
    NodeGpu(UUIDS[0], 0, "L40S", 46068, (), ("ml/a-0",)),
    NodeGpu(UUIDS[1], 1, "L40S", 46068, (), ()),
]


def helm_objects() -> tuple[Manifest, Manifest]:
    """The clusters scenario's Helm release: its DaemonSet and its ConfigMap of configs."""
    objects = yaml.safe_load(SCENARIO.read_text())["objects"]
    ds = next(
        o
        for o in objects
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == ("nvidia-device-plugin")
    )
    cm = next(
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == ("nvidia-device-plugin-configs")
    )
    cm = copy.deepcopy(cm)
    cm["metadata"]["resourceVersion"] = "7"
    return copy.deepcopy(ds), cm


def plan(request: SplitRequest, *, label: str | None = "ts4", **kw: Any) -> SplitPlan:
    ds, cm = helm_objects()
    labels = {LABEL: label} if label else {}
    return plan_split(
        request,
        node=kw.get("node") or f.node("gpu-ts-3", labels=labels),
        shared=ds,
        shared_configmap=kw.get("configmap", cm),
        own=None,
        own_configmap=None,
        gpus=GPUS,
        slots_before=8,
        shared_nodes=2,
    )


def ask(mode: str = "time-slicing", replicas: int = 2, **kw: Any) -> SplitRequest:
    return SplitRequest("gpu-ts-3", tuple(UUIDS), mode, replicas, **kw)  # type: ignore[arg-type]


def test_a_new_mode_adds_one_key_and_sets_the_node_label() -> None:
    result = plan(ask("time-slicing", 2))
    assert (result.before.config_key, result.before.mode, result.before.replicas) == (
        "ts4",
        "time-slicing",
        4,
    )
    assert [(w.action, w.kind, w.name) for w in result.writes] == [
        ("replace", "ConfigMap", "nvidia-device-plugin-configs"),
        ("label", "Node", "gpu-ts-3"),
    ]
    configmap = result.writes[0].after or {}
    assert sorted(configmap["data"]) == ["default", "gpu-slots-ts-2", "ts4"]
    assert "replicas: 2" in configmap["data"]["gpu-slots-ts-2"]
    assert configmap["metadata"]["resourceVersion"] == "7"
    assert result.writes[1].after == {"labels": {LABEL: "gpu-slots-ts-2"}}
    assert (result.before.slots, result.after.slots) == (8, 4)
    assert result.warnings == (
        ChangeWarning("slots-shrink-under-pods", {"before": 8, "after": 4, "pods": "ml/a-0"}),
    )
    assert result.describe() == (
        "node gpu-ts-3: shared DaemonSet nvidia-device-plugin, time-slicing x4 (config ts4), "
        f"GPUs {UUIDS[0]},{UUIDS[1]} -> shared DaemonSet nvidia-device-plugin, time-slicing "
        f"x2 (config gpu-slots-ts-2), GPUs {UUIDS[0]},{UUIDS[1]}"
    )


def test_a_key_with_the_same_content_is_reused_and_only_the_label_changes() -> None:
    result = plan(ask("basic", 1))
    assert [(w.action, w.kind) for w in result.writes] == [("label", "Node")]
    assert result.after.config_key == "default"
    back = plan(ask("time-slicing", 4), label=None)  # unset: the `named` fallback, default
    assert back.before.config_key is None and back.before.mode == "basic"
    assert back.writes[0].after == {"labels": {LABEL: "ts4"}}


def test_a_taken_key_name_with_other_content_gets_a_suffix() -> None:
    _, cm = helm_objects()
    cm["data"]["gpu-slots-ts-2"] = "version: v1\n"
    result = plan(ask("time-slicing", 2), configmap=cm)
    assert result.after.config_key == "gpu-slots-ts-2-2"


def test_rollback_sets_the_label_back_exactly_or_removes_it() -> None:
    restore = plan(ask(restore_config_key=True, config_key=None))
    assert [w.after for w in restore.writes] == [{"labels": {LABEL: None}}]
    assert (restore.after.mode, restore.after.config_key) == ("basic", None)
    with pytest.raises(PlanRefused) as gone:
        plan(ask(restore_config_key=True, config_key="gpu-slots-ts-9"))
    assert gone.value.code is RefusalCode.NOT_REVERSIBLE


def test_refusals_gpu_selection_same_mode_and_replicas_out_of_range() -> None:
    with pytest.raises(PlanRefused) as selection:
        plan(SplitRequest("gpu-ts-3", (UUIDS[1],), "basic"))
    assert selection.value.code is RefusalCode.CONFIG_PER_NODE
    with pytest.raises(PlanRefused) as same:
        plan(ask("time-slicing", 4))
    assert same.value.code is RefusalCode.NO_CHANGE
    with pytest.raises(PlanRefused) as range_:
        plan(ask("time-slicing", 65))
    assert range_.value.code is RefusalCode.OUT_OF_RANGE
    with pytest.raises(PlanRefused) as back:
        plan(SplitRequest("gpu-ts-3", None))
    assert back.value.code is RefusalCode.NOT_SPLIT


def test_no_agent_report_is_refused_before_anything_is_planned() -> None:
    ds, cm = helm_objects()
    with pytest.raises(PlanRefused) as none:
        plan_split(
            ask(),
            node=f.node("gpu-ts-3", labels={LABEL: "ts4"}),
            shared=ds,
            shared_configmap=cm,
            own=None,
            own_configmap=None,
            gpus=[],
            slots_before=None,
            shared_nodes=2,
        )
    assert none.value.code is RefusalCode.NO_INVENTORY
