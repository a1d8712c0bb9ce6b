"""The split planner: the node's own DaemonSet, the shared one's exclusion, refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.domain.changes.models import PlanRefused, RefusalCode
from app.domain.changes.split import plan_split, split_state
from app.domain.changes.split_affinity import exclude_split_nodes
from app.domain.changes.split_models import NODE_LABEL, NodeGpu, SplitPlan, SplitRequest
from app.domain.cluster import Manifest
from tests import factories as f

UUIDS = [f.gpu_uuid("gpu-1", i) for i in range(4)]
GPUS = [
    NodeGpu(UUIDS[0], 0, "A100", 81920, ("pid 7 alice: python train.py",), ()),
    NodeGpu(UUIDS[1], 1, "A100", 81920, (), ()),
    NodeGpu(UUIDS[2], 2, "A100", 81920, (), ("ml/nb-0",)),
    NodeGpu(UUIDS[3], 3, "A100", 81920, (), ()),
]
SHARED = "nvidia-device-plugin-daemonset"
OWN = f"{SHARED}-gpu-1"


def shared(**kwargs: Any) -> Manifest:
    ds = f.plugin_daemonset(env={"NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS[2:])}, **kwargs)
    ds["metadata"]["resourceVersion"] = "41"
    ds["spec"]["selector"] = {"matchLabels": {"name": "plugin"}}
    ds["spec"]["template"]["metadata"] = {"labels": {"name": "plugin", "tier": "gpu"}}
    return ds


def plan(
    request: SplitRequest,
    *,
    ds: Manifest | None = None,
    own: Manifest | None = None,
    node: Manifest | None = None,
) -> SplitPlan:
    return plan_split(
        request,
        node=node or f.node("gpu-1"),
        shared=ds if ds is not None else shared(),
        shared_configmap=None,
        own=own,
        own_configmap=None,
        gpus=GPUS,
        slots_before=2,
        shared_nodes=5,
    )


def env_of(ds: Manifest) -> dict[str, str]:
    container = ds["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def test_giving_gpu_1_creates_the_node_daemonset_excludes_the_node_and_labels_it() -> None:
    result = plan(SplitRequest("gpu-1", (UUIDS[3], UUIDS[1], UUIDS[2])))
    assert [(w.action, w.kind, w.name) for w in result.writes] == [
        ("create", "DaemonSet", OWN),
        ("replace", "DaemonSet", SHARED),
        ("label", "Node", "gpu-1"),
    ]
    own, excluded, label = (w.after for w in result.writes)
    assert env_of(own)["NVIDIA_VISIBLE_DEVICES"] == ",".join(UUIDS[1:])
    assert own["spec"]["selector"] == {"matchLabels": {NODE_LABEL: OWN}}
    assert own["spec"]["template"]["metadata"]["labels"] == {"tier": "gpu", NODE_LABEL: OWN}
    assert own["spec"]["template"]["spec"]["nodeSelector"] == {NODE_LABEL: OWN}
    assert "affinity" not in own["spec"]["template"]["spec"]
    assert "resourceVersion" not in own["metadata"]
    assert (
        json.loads(own["metadata"]["annotations"]["gpu-slots.io/split"])["kubernetes_gpus"]
        == UUIDS[1:]
    )
    terms = excluded["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": NODE_LABEL, "operator": "DoesNotExist"}]}]
    assert env_of(excluded) == env_of(shared())  # nothing node-specific in the shared one
    assert label == {"labels": {NODE_LABEL: OWN}}
    assert (result.before.slots, result.after.slots) == (2, 3)
    assert result.host_processes == ()


def test_host_processes_on_gpus_going_to_kubernetes_and_pods_on_gpus_going_to_the_host() -> None:
    result = plan(SplitRequest("gpu-1", (UUIDS[0], UUIDS[3])))
    assert result.host_processes == ("pid 7 alice: python train.py",)
    assert result.pods_on_host_gpus == ("ml/nb-0",)


def test_time_slicing_gives_the_node_its_own_config_and_the_exclusion_is_added_once() -> None:
    excluded = exclude_split_nodes(shared())
    assert excluded is not None and exclude_split_nodes(excluded) is None
    result = plan(SplitRequest("gpu-1", tuple(UUIDS), "time-slicing", 4), ds=excluded)
    writes = result.writes
    assert [(w.action, w.kind) for w in writes] == [
        ("create", "ConfigMap"),
        ("create", "DaemonSet"),
        ("label", "Node"),
    ]
    assert "replicas: 4" in writes[0].after["data"]["config.yaml"]
    assert env_of(writes[1].after)["CONFIG_FILE"] == "/etc/gpu-slots/node-config/config.yaml"
    assert result.after.slots == 16


@pytest.mark.parametrize(
    ("request_", "ds", "code"),
    [
        (SplitRequest("gpu-1", ("GPU-nope",)), None, RefusalCode.UNKNOWN_GPU),
        (SplitRequest("gpu-1", (UUIDS[0],), "time-slicing", 1), None, RefusalCode.OUT_OF_RANGE),
        (SplitRequest("gpu-1", None), None, RefusalCode.NOT_SPLIT),
        (SplitRequest("gpu-1", (UUIDS[2], UUIDS[3])), "operator", RefusalCode.OPERATOR_MANAGED),
    ],
)
def test_refusals(request_: SplitRequest, ds: str | None, code: RefusalCode) -> None:
    with pytest.raises(PlanRefused) as refused:
        plan(request_, ds=shared(operator=True) if ds == "operator" else None)
    assert refused.value.code is code


def test_a_node_name_past_63_characters_splits_with_label_values_within_63() -> None:
    """Issue 33: a 67-character node name failed the split (label value over 63)."""
    long_name = "gpu-" + "a" * 58 + ".lab1"  # 67 characters, a valid node name
    result = plan_split(
        SplitRequest(long_name, (UUIDS[1], UUIDS[2], UUIDS[3])),
        node=f.node(long_name),
        shared=shared(),
        shared_configmap=None,
        own=None,
        own_configmap=None,
        gpus=GPUS,
        slots_before=2,
        shared_nodes=5,
    )
    for write in result.writes:
        after = write.after or {}
        labels = (after.get("metadata") or {}).get("labels") or after.get("labels") or {}
        assert all(len(str(v)) <= 63 for v in labels.values() if v), (write.kind, labels)
    own = next(w.after for w in result.writes if w.action == "create")
    assert own["metadata"]["annotations"]["gpu-slots.io/node"] == long_name
    assert len(own["metadata"]["labels"]["gpu-slots.io/node"]) <= 63


def test_a_node_left_vacant_by_a_cut_short_hand_over_is_returned_by_removing_the_label() -> None:
    vacant = f.node("gpu-1")
    vacant["metadata"].setdefault("labels", {})[NODE_LABEL] = ""  # app.kube.handover's VACANT

    writes = plan(SplitRequest("gpu-1", None), node=vacant).writes

    assert [(w.action, w.kind, w.after) for w in writes] == [
        ("label", "Node", {"labels": {NODE_LABEL: None}})
    ]


@pytest.mark.parametrize(
    "stored",
    [
        {"mode": "time-slicing", "replicas": "four"},
        {"mode": "time-slicing", "replicas": int("9" * 4000)},
        {"mode": "time-slicing", "replicas": 0},
        {"mode": "mps", "replicas": 4},
        {"mode": ["time-slicing"], "replicas": 4},
    ],
)
def test_a_split_annotation_we_never_write_is_passed_over_for_the_daemonsets_own_config(
    stored: dict[str, Any],
) -> None:
    # Anyone who may edit the node's own DaemonSet may write its split annotation: what we
    # never write there reads the DaemonSet's own config instead (no 500 on the editor).
    excluded = exclude_split_nodes(shared())
    assert excluded is not None
    configmap, own = (
        w.after
        for w in plan(SplitRequest("gpu-1", tuple(UUIDS), "time-slicing", 4), ds=excluded).writes[
            :2
        ]
    )
    own["metadata"]["annotations"]["gpu-slots.io/split"] = json.dumps(stored)
    state = split_state(own, configmap, GPUS)
    assert (state.own, state.mode, state.replicas) == (True, "time-slicing", 4)
