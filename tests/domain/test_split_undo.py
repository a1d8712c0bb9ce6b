"""Judging a split write from the object as re-read, and the write that takes it back."""

from __future__ import annotations

from app.domain.changes.split_models import NODE_LABEL, ObjectWrite
from app.domain.changes.split_undo import inverse, landed, unchanged
from app.domain.cluster import Manifest

NODE_BEFORE: Manifest = {"metadata": {"name": "gpu-1", "labels": {"zone": "a"}}}
NODE_AFTER: Manifest = {"metadata": {"name": "gpu-1", "labels": {"zone": "a", NODE_LABEL: "own"}}}
LABEL = ObjectWrite("label", "Node", "gpu-1", NODE_BEFORE, {"labels": {NODE_LABEL: "own"}})


def configmap(data: dict[str, str], version: str) -> Manifest:
    return {
        "metadata": {"name": "configs", "resourceVersion": version, "uid": "u-1"},
        "data": data,
    }


def test_a_label_write_is_judged_by_the_label_and_undone_by_the_old_value() -> None:
    assert landed(LABEL, NODE_AFTER) is True
    assert landed(LABEL, NODE_BEFORE) is False
    assert unchanged(LABEL, NODE_BEFORE) is True
    assert inverse(LABEL, NODE_AFTER).after == {"labels": {NODE_LABEL: None}}


def test_a_configmap_replace_is_undone_from_the_current_resource_version() -> None:
    old, new = configmap({"default": "a"}, "7"), configmap({"default": "a", "k": "b"}, "7")
    write = ObjectWrite("replace", "ConfigMap", "configs", old, new)
    now = configmap({"default": "a", "k": "b"}, "9")
    assert landed(write, now) is True
    back = inverse(write, now)
    assert (back.action, back.after) == (
        "replace",
        {"metadata": {"name": "configs", "resourceVersion": "9"}, "data": {"default": "a"}},
    )
    someone_else = configmap({"default": "z"}, "10")
    assert landed(write, someone_else) is False
    assert unchanged(write, someone_else) is False


def test_a_create_is_undone_by_a_delete_of_the_object_as_it_is_now() -> None:
    created = configmap({"config.yaml": "x"}, "3")
    write = ObjectWrite("create", "ConfigMap", "configs", None, created)
    assert landed(write, created) is True
    assert unchanged(write, None) is True
    back = inverse(write, created)
    assert (back.action, back.before) == ("delete", created)
