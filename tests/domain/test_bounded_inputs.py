"""The one-step readers of issue 48: bounded JSON, typed change records, bounded YAML edits."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from app.domain.bounds import JsonRefused, read_json
from app.domain.changes.edits import time_slicing_text
from app.domain.changes.freshness import check_fresh, freshness_token, parse_token
from app.domain.changes.history import RecordInvalid, record_from_json
from app.domain.changes.models import ChangeWarning, PlanRefused, PluginSettings, json_annotation
from app.domain.changes.split_models import SplitState
from app.domain.snapshot import Mode


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 12_000 + "]" * 12_000, "too-deep"),
        ("[" * 20 + "]" * 20, "too-deep"),
        ("[NaN]", "number-constant"),
        ("[" + "9" * 19 + "]", "number-too-long"),
        ("[1e400]", "number-out-of-range"),
        ("{", "not-json"),
        (b"\xff", "not-json"),
    ],
)
def test_read_json_refuses_with_a_code(text: str | bytes, why: str) -> None:
    with pytest.raises(JsonRefused) as refused:
        read_json(text)
    assert refused.value.why == why


def test_read_json_reads_what_a_writer_of_ours_writes() -> None:
    assert read_json('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


def test_a_token_of_12000_brackets_is_a_bad_token_not_a_recursion_error() -> None:
    token = base64.urlsafe_b64encode(b"[" * 12_000).decode()
    with pytest.raises(PlanRefused) as refused:
        parse_token(token)
    assert refused.value.why == "bad-token.not-base64-json"


def _record(kind: str, before: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "x",
        "kind": kind,
        "action": "change",
        "at": "2026-01-01T00:00:00Z",
        "before": before,
        "after": {},
    }


@pytest.mark.parametrize(
    ("kind", "before", "field"),
    [
        ("mode", {"replicas": "four"}, "before.replicas"),
        ("mode", {"replicas": "9" * 5000}, "before.replicas"),
        ("mode", {"replicas": True}, "before.replicas"),
        ("mode", {"replicas": -1}, "before.replicas"),
        ("mode", {"replicas": 2.5}, "before.replicas"),
        ("mode", {"mode": ["basic"]}, "before.mode"),
        ("mode", {"renameByDefault": "yes"}, "before.renameByDefault"),
        ("split", {"kubernetes_gpus": "GPU-1"}, "before.kubernetes_gpus"),
        ("split", {"kubernetes_gpus": [{"a": 1}]}, "before.kubernetes_gpus"),
        ("split", {"config_key": 5}, "before.config_key"),
        ("split", {"kubernetesGpus": ["x" * 300]}, "before.kubernetesGpus"),
        ("split", {"mode": "shared"}, "before.mode"),
        ("mode", {"resource": 7}, "before.resource"),
    ],
)
def test_a_record_field_of_the_wrong_kind_is_named(
    kind: str, before: dict[str, Any], field: str
) -> None:
    with pytest.raises(RecordInvalid) as refused:
        record_from_json(_record(kind, before))
    assert refused.value.why == "field-invalid"
    assert refused.value.params["field"] == field
    assert len(str(refused.value.params["value"])) < 80  # cut short


def test_a_record_as_written_reads_back_typed() -> None:
    before = {
        "mode": "time-slicing",
        "replicas": 4,
        "resource": "nvidia.com/gpu",
        "renameByDefault": False,
        "failRequestsGreaterThanOne": True,
        "error": None,
    }
    read = record_from_json(_record("mode", before))
    assert read.before == PluginSettings(Mode.TIME_SLICING, 4, "nvidia.com/gpu", False, True)
    assert read.as_json()["before"] == before
    split = {"daemonset": "p-n1", "own": True, "kubernetesGpus": ["GPU-1"], "mode": "basic"}
    typed = record_from_json(json.loads(json.dumps(_record("split", {**split, "replicas": 1}))))
    assert typed.before == SplitState("p-n1", True, ("GPU-1",), "basic", 1)
    assert typed.as_json()["before"] == {**split, "replicas": 1}


def test_a_split_record_in_the_old_spelling_reads_as_the_new() -> None:
    old = {"own": False, "kubernetes_gpus": ["GPU-1"], "config_key": None, "mode": "basic"}
    read = record_from_json(_record("split", old))
    assert read.before == SplitState("", False, ("GPU-1",), "basic", 1, None, True)
    assert read.as_json()["before"]["kubernetesGpus"] == ["GPU-1"]
    assert "kubernetes_gpus" not in read.as_json()["before"]


BLOCK = (
    "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: false\n"
    "    failRequestsGreaterThanOne: false\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 8\n"
)


def _bomb() -> str:
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in "bcdefghi":
        bomb += f"{level}: &{level} [" + ",".join([f"*{chr(ord(level) - 1)}"] * 9) + "]\n"
    return bomb


def _edit(text: str, warnings: list[ChangeWarning]) -> str:
    return time_slicing_text(
        text,
        replicas=8,
        rename_by_default=False,
        fail_requests_greater_than_one=False,
        warnings=warnings,
    )


def test_an_alias_bomb_beside_the_same_block_is_refused_fast_and_replaced() -> None:
    warnings: list[ChangeWarning] = []
    started = time.monotonic()
    text = _edit(BLOCK + _bomb(), warnings)
    assert time.monotonic() - started < 0.5  # 5.6-7.0 s comparing expanded trees before
    assert text == BLOCK
    assert warnings == [
        ChangeWarning("config-past-bound-replaced", {"bound": "aliases", "limit": 20_000})
    ]


def test_the_same_config_is_kept_as_the_admin_wrote_it() -> None:
    written = BLOCK.replace("false", "no") + "# a comment kept\n"
    warnings: list[ChangeWarning] = []
    assert _edit(written, warnings) is written  # go-yaml v2 reads `no` as false
    assert warnings == []


def test_a_token_naming_objects_this_change_does_not_read_is_another_changes() -> None:
    shared = {"kind": "DaemonSet", "metadata": {"uid": "u1", "generation": 2}, "spec": {}}
    split_read = {"node/n": {"kind": "Node", "metadata": {"uid": "n1"}}, "daemonset/x": shared}
    with pytest.raises(PlanRefused) as refused:
        check_fresh(freshness_token(split_read), {"daemonset/x": shared})
    assert refused.value.why == "bad-token.other-change"
    with pytest.raises(PlanRefused) as fewer:  # a mode change's token sent to a split
        check_fresh(freshness_token({"daemonset/x": shared}), split_read)
    assert fewer.value.why == "bad-token.other-change"
    check_fresh(freshness_token(split_read), split_read)  # the change it was made for: fresh


def test_a_deep_annotation_of_ours_is_no_record_never_a_recursion_error() -> None:
    deep = {"metadata": {"annotations": {"gpu-slots.io/split": "[" * 20_000 + "]" * 20_000}}}
    assert json_annotation(deep, "gpu-slots.io/split") is None
    kept = {"metadata": {"annotations": {"gpu-slots.io/split": '{"mode": "basic"}'}}}
    assert json_annotation(kept, "gpu-slots.io/split") == {"mode": "basic"}
