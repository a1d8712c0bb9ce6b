"""What a write did, judged from the objects re-read after its answer was lost."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.changes.models import ChangePlan, ConfigMapAction, PluginSettings
from app.domain.changes.outcome import Found, configmap_found, contains, daemonset_found, describe
from app.domain.snapshot import Mode

BEFORE_DS = {"metadata": {"resourceVersion": "10"}, "spec": {"template": {"spec": {"a": 1}}}}
PLANNED_DS = {"metadata": {"resourceVersion": "10"}, "spec": {"template": {"spec": {"a": 2}}}}
BEFORE_CM = {"metadata": {"resourceVersion": "5"}, "data": {"config.yaml": "old"}}
PLANNED_CM = {"metadata": {"resourceVersion": "5"}, "data": {"config.yaml": "new"}}


def plan(*, configmap_before: Any = BEFORE_CM, configmap: Any = PLANNED_CM) -> ChangePlan:
    settings = PluginSettings(
        mode=Mode.BASIC,
        replicas=1,
        resource="nvidia.com/gpu",
        rename_by_default=False,
        fail_requests_greater_than_one=False,
    )
    return ChangePlan(
        kind="change",
        daemonset_before=BEFORE_DS,
        daemonset=PLANNED_DS,
        configmap_before=configmap_before,
        configmap=configmap,
        configmap_action=ConfigMapAction.UPDATE if configmap_before else ConfigMapAction.CREATE,
        before=settings,
        after=settings,
        config_hash=None,
        rolls_pods=True,
    )


@pytest.mark.parametrize(
    ("whole", "part", "expected"),
    [
        ({"a": 1, "defaulted": True}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"l": [{"x": 1, "y": 2}]}, {"l": [{"x": 1}]}, True),
        ({"l": [{"x": 1}, {"x": 2}]}, {"l": [{"x": 1}]}, False),
        ({"a": "1"}, {"a": 1}, False),
    ],
)
def test_contains_allows_server_defaults_only(whole: Any, part: Any, expected: bool) -> None:
    assert contains(whole, part) is expected


def test_daemonset_found_old_new_or_other() -> None:
    moved = {"metadata": {"resourceVersion": "11"}}
    assert daemonset_found(BEFORE_DS, plan()) is Found.OLD
    written = {**moved, "spec": {"template": {"spec": {"a": 2, "default": 0}}}}
    assert daemonset_found(written, plan()) is Found.NEW
    assert daemonset_found({**moved, "spec": {"template": {"spec": {"a": 3}}}}, plan()) is (
        Found.OTHER
    )
    assert daemonset_found(None, plan()) is Found.OTHER


def test_configmap_found_old_new_or_other() -> None:
    assert configmap_found(BEFORE_CM, plan()) is Found.OLD
    assert configmap_found(PLANNED_CM, plan()) is Found.NEW
    assert configmap_found({"data": {"config.yaml": "theirs"}}, plan()) is Found.OTHER
    assert configmap_found(None, plan()) is Found.OTHER
    created = plan(configmap_before=None)
    assert configmap_found(None, created) is Found.OLD
    assert configmap_found(PLANNED_CM, created) is Found.NEW


def test_describe_names_the_state() -> None:
    assert describe(configmap=Found.OLD, daemonset=Found.OLD) == "old"
    assert describe(configmap=None, daemonset=Found.NEW) == "new"
    assert describe(configmap=Found.NEW, daemonset=Found.OLD) == "half-new-old"
    assert describe(configmap=Found.OTHER, daemonset=Found.OLD) == "half-other-old"
