"""A change record's typed sides, and the request that undoes it (app.domain.changes.records)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from app.domain.changes.history import ChangeRecord, RecordKind, record_from_json, side_from_json
from app.domain.changes.models import ChangeRequest, PlanRefused, RefusalCode
from app.domain.changes.records import mode_undo_request, split_undo_request
from app.domain.changes.split_models import SplitRequest

AT = datetime(2026, 12, 6, 15, 0, tzinfo=UTC)
NODE = "gpu-1"


def _record(kind: RecordKind, before: dict[str, Any], *, node: str | None = NODE) -> ChangeRecord:
    return ChangeRecord(
        id="20261206-150000-000-abc123",
        kind=kind,
        action="change",
        at=AT,
        user="alice",
        summary="",
        before=side_from_json(kind, "before", before),
        after=side_from_json(kind, "after", {}),
        node=node,
    )


@pytest.mark.parametrize(
    ("before", "request_"),
    [
        ({"mode": "basic", "replicas": 1}, ChangeRequest("basic", 1)),
        ({"mode": "basic", "replicas": 0}, ChangeRequest("basic", 1)),
        (
            {"mode": "time-slicing", "replicas": 4, "renameByDefault": True},
            ChangeRequest("time-slicing", 4, rename_by_default=True),
        ),
        (
            {"mode": "time-slicing", "replicas": 8, "failRequestsGreaterThanOne": True},
            ChangeRequest("time-slicing", 8, fail_requests_greater_than_one=True),
        ),
    ],
)
def test_a_mode_record_is_undone_by_asking_for_its_settings_before(
    before: dict[str, Any], request_: ChangeRequest
) -> None:
    assert mode_undo_request(_record("mode", before)) == request_


@pytest.mark.parametrize(
    "before",
    [
        {"mode": "mps", "replicas": 2},
        {"mode": "unknown"},
        {},  # a side left out reads as unknown
        {"mode": "time-slicing", "replicas": 4, "error": "config.yaml: bad"},
    ],
)
def test_a_mode_record_of_a_config_gpu_slots_does_not_write_is_not_reversible(
    before: dict[str, Any],
) -> None:
    with pytest.raises(PlanRefused) as refused:
        mode_undo_request(_record("mode", before))
    assert (refused.value.code, refused.value.why) == (
        RefusalCode.NOT_REVERSIBLE,
        "config-not-writable",
    )


@pytest.mark.parametrize(
    ("before", "request_"),
    [
        (
            {"daemonset": "p", "own": False, "kubernetesGpus": ["G2", "G3"], "mode": "basic"},
            SplitRequest(NODE, None),
        ),
        (
            {"own": True, "kubernetesGpus": ["G1"], "mode": "time-slicing", "replicas": 4},
            SplitRequest(NODE, ("G1",), "time-slicing", 4),
        ),
        (  # the old spelling, as records kept before round 5 hold it
            {"own": True, "kubernetes_gpus": ["G1", "G2"], "mode": "basic", "replicas": 1},
            SplitRequest(NODE, ("G1", "G2"), "basic", 1),
        ),
        (  # a config-manager install: the node's config key goes back, unset included
            {"own": False, "kubernetesGpus": ["G1"], "mode": "basic", "configKey": "ts-2"},
            SplitRequest(NODE, ("G1",), restore_config_key=True, config_key="ts-2"),
        ),
        (
            {"own": False, "kubernetes_gpus": ["G1"], "mode": "basic", "config_key": None},
            SplitRequest(NODE, ("G1",), restore_config_key=True, config_key=None),
        ),
    ],
)
def test_a_split_record_is_undone_by_asking_for_the_nodes_split_before(
    before: dict[str, Any], request_: SplitRequest
) -> None:
    assert split_undo_request(_record("split", before), confirm=False) == request_


def test_a_split_record_naming_no_node_is_not_reversible() -> None:
    with pytest.raises(PlanRefused) as refused:
        split_undo_request(_record("split", {"own": True}, node=None), confirm=True)
    assert refused.value.why == "record-names-no-node"


def test_a_record_holds_the_sides_of_its_own_kind_only() -> None:
    with pytest.raises(TypeError):
        ChangeRecord(
            id="x",
            kind="mode",
            action="change",
            at=AT,
            user="alice",
            summary="",
            before=side_from_json("split", "before", {}),
            after=side_from_json("split", "after", {}),
        )


def test_a_record_lists_both_kinds_in_one_spelling() -> None:
    split = _record("split", {"own": False, "kubernetes_gpus": ["G1"], "config_key": "k"})
    mode = _record("mode", {"mode": "basic", "replicas": 1})
    keys = set(split.as_json()["before"]) | set(mode.as_json()["before"])
    assert all("_" not in key for key in keys), keys
    assert record_from_json(split.as_json()) == split
    assert record_from_json(mode.as_json()) == mode
