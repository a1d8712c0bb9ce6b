"""Writes whose answer was lost: the dashboard re-reads before undoing, and says what it found.

The simulator makes the write and then answers 504 (`after_commit`), as an API server does
when the answer to a committed write times out.
"""

from __future__ import annotations

import logging

import pytest

from tests.conftest import Stack
from tests.live import wait_for
from tests.web.test_admin_api import NS, TO_TS4, admin, config, node_slots, put

__all__ = ["admin"]  # the fixture, re-used
CM = "nvidia-device-plugin-config"


def test_daemonset_write_committed_but_answer_lost_is_not_undone(
    admin: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 15: the dashboard used to delete the ConfigMap the DaemonSet now mounts."""
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=504, after_commit=True)

    response = put(admin, TO_TS4)

    assert response.status_code == 200, response.text
    body = response.json()
    assert any("re-reading shows it was written" in w for w in body["warnings"])
    assert admin.simulator.get("ConfigMap", CM, NS) is not None
    wait_for(lambda: config(admin)["mode"] == "time-slicing", what="time-slicing in the config")
    wait_for(lambda: node_slots(admin) == (8, "nvidia.com/gpu"), what="8 slots after the roll")


def test_configmap_write_committed_but_answer_lost_goes_on_with_the_change(admin: Stack) -> None:
    admin.simulator.fail_next(verb="create", kind="ConfigMap", code=504, after_commit=True)

    response = put(admin, TO_TS4)

    assert response.status_code == 200, response.text
    assert any("ConfigMap write was lost" in w for w in response.json()["warnings"])
    wait_for(lambda: config(admin)["mode"] == "time-slicing", what="time-slicing in the config")


def test_configmap_write_not_committed_says_nothing_was_written(admin: Stack) -> None:
    admin.simulator.fail_next(verb="create", kind="ConfigMap", code=504)

    response = put(admin, TO_TS4)

    assert response.status_code in (502, 503)
    assert "nothing was written" in response.json()["detail"]
    assert admin.simulator.get("ConfigMap", CM, NS) is None
    assert config(admin)["mode"] == "basic"


def test_lost_undo_answer_is_re_read_and_the_old_state_reported(
    admin: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=503)
    admin.simulator.fail_next(verb="delete", kind="ConfigMap", code=504, after_commit=True)

    with caplog.at_level(logging.WARNING, logger="gpu_slots.audit"):
        response = put(admin, TO_TS4)

    assert response.status_code in (502, 503)
    detail = response.json()["detail"]
    assert "it was undone: the cluster is as before the change" in detail
    assert admin.simulator.get("ConfigMap", CM, NS) is None
    [record] = [r for r in caplog.records if r.name == "gpu_slots.audit"]
    # the audit's fields come through `extra=`, into the record's __dict__
    assert record.__dict__["state"] == "old"
    assert record.__dict__["restored"] is True


def test_half_state_is_named_to_the_admin_and_the_audit(
    admin: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=503)
    admin.simulator.fail_next(verb="delete", kind="ConfigMap", code=503)

    with caplog.at_level(logging.WARNING, logger="gpu_slots.audit"):
        response = put(admin, TO_TS4)

    assert "NEW config" in response.json()["detail"]
    [record] = [r for r in caplog.records if r.name == "gpu_slots.audit"]
    assert record.__dict__["state"] == "half-new-old"


def test_configmap_deletion_committed_but_answer_lost_reports_it_deleted(admin: Stack) -> None:
    assert put(admin, TO_TS4).status_code == 200
    wait_for(lambda: config(admin)["mode"] == "time-slicing", what="time-slicing in the config")
    admin.simulator.fail_next(verb="delete", kind="ConfigMap", code=504, after_commit=True)

    response = put(admin, {"mode": "basic", "deleteConfigMap": True})

    assert response.status_code == 200, response.text
    assert any("shows it was deleted" in w for w in response.json()["warnings"])
    assert admin.simulator.get("ConfigMap", CM, NS) is None
