"""The freshness token: a status write passes, an edit of what the plan read names the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.domain.changes.freshness import check_fresh, freshness_token
from app.domain.changes.models import Phrase, PlanRefused, RefusalCode

KEY = "daemonset/kube-system/nvidia-device-plugin-daemonset"
CM = "configmap/kube-system/nvidia-device-plugin-config"


def daemonset() -> dict[str, Any]:
    return {
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset",
            "uid": "u-1",
            "generation": 3,
            "resourceVersion": "240",
            "labels": {"app": "plugin"},
            "annotations": {},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "p"}]}}, "updateStrategy": {}},
        "status": {"numberReady": 5},
    }


def configmap() -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"uid": "c-1"}, "data": {"config.yaml": "v1"}}


def test_freshness_status_only_write_passes() -> None:
    token = freshness_token({KEY: daemonset(), CM: None})
    now = daemonset()
    now["metadata"]["resourceVersion"] = "241"
    now["status"] = {"numberReady": 4}

    check_fresh(token, {KEY: now, CM: None})


def test_freshness_spec_edit_names_the_field_and_generation() -> None:
    token = freshness_token({KEY: daemonset()})
    now = daemonset()
    now["metadata"]["generation"] = 4
    now["spec"]["updateStrategy"] = {"rollingUpdate": {"maxUnavailable": 2}}

    with pytest.raises(PlanRefused) as refused:
        check_fresh(token, {KEY: now})

    assert refused.value.code is RefusalCode.STALE
    assert refused.value.params["changes"] == (
        Phrase(
            "changed-generation", {"key": KEY, "paths": "spec.updateStrategy", "then": 3, "now": 4}
        ),
    )


def test_freshness_configmap_data_edit_is_stale() -> None:
    token = freshness_token({CM: configmap()})
    now = copy.deepcopy(configmap())
    now["data"]["config.yaml"] = "v2"

    with pytest.raises(PlanRefused) as refused:
        check_fresh(token, {CM: now})

    assert refused.value.params["changes"] == (Phrase("changed", {"key": CM, "paths": "data"}),)


@pytest.mark.parametrize(
    ("then", "now", "said"),
    [
        (None, configmap(), Phrase("created", {"key": CM})),
        (configmap(), None, Phrase("deleted", {"key": CM})),
        (
            configmap(),
            {**configmap(), "metadata": {"uid": "c-2"}},
            Phrase("recreated", {"key": CM, "then": "c-1", "now": "c-2"}),
        ),
    ],
)
def test_freshness_existence_and_identity_moves_are_stale(
    then: dict[str, Any] | None, now: dict[str, Any] | None, said: Phrase
) -> None:
    with pytest.raises(PlanRefused) as refused:
        check_fresh(freshness_token({CM: then}), {CM: now})
    assert refused.value.params["changes"] == (said,)


def test_freshness_node_annotation_writes_pass_label_edits_do_not() -> None:
    node = {"kind": "Node", "metadata": {"uid": "n", "labels": {"a": "1"}, "annotations": {}}}
    token = freshness_token({"node/gpu-1": node})
    busy = copy.deepcopy(node)
    busy["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    check_fresh(token, {"node/gpu-1": busy})

    relabelled = copy.deepcopy(node)
    relabelled["metadata"]["labels"]["gpu-slots.io/plugin-daemonset"] = "x"
    with pytest.raises(PlanRefused) as refused:
        check_fresh(token, {"node/gpu-1": relabelled})
    changed = Phrase("changed", {"key": "node/gpu-1", "paths": "metadata.labels"})
    assert refused.value.params["changes"] == (changed,)


@pytest.mark.parametrize("token", ["", "!!!", "e30", "x" * 20_000])
def test_freshness_malformed_token_is_refused_with_the_reason(token: str) -> None:
    with pytest.raises(PlanRefused) as refused:
        check_fresh(token, {KEY: daemonset()})
    assert refused.value.code is RefusalCode.BAD_TOKEN
    assert refused.value.why.startswith("bad-token.")
