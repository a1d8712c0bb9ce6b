"""Writes that tell the truth (issue 33): the loser of a race hears 409 and the winner's
change; every applied split and its undo leave one `gpu_slots.audit` line.

Two admins splitting one node at once: the loser got 502 "the cluster is as before" while the
winner's split stood, and an applied split and its return left no audit line.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from app.domain.changes.history import change_id
from app.domain.changes.records import Authored, split_record
from app.domain.changes.split_models import SplitRequest
from app.kube.concurrent import ConcurrentChange
from app.kube.split_writer import SplitWriter
from app.web.auth.principal import Principal
from app.web.http.errors import cluster_status
from app.web.services.changes.gpu_split import preview_split
from app.web.services.changes.pipeline import writer_for
from tests.conftest import Stack, runtime_of
from tests.web.test_gpu_split_api import GIVE_GPU_1, GPU, NODE, OWN, SHARED, admin, daemonsets, put

__all__ = ["admin"]  # the fixture

ADMIN = Principal("bob", (), "bearer", is_admin=True)
CONFIRMED = {**GIVE_GPU_1, "confirmHostProcesses": True}
NOW = datetime(2026, 12, 3, tzinfo=UTC)


def test_the_loser_of_two_concurrent_splits_gets_409_naming_the_winners_change(
    admin: Stack,
) -> None:
    runtime = runtime_of(admin.app)
    request = SplitRequest(NODE, (GPU[1], GPU[2], GPU[3]), confirm_host_processes=True)
    losing = preview_split(runtime.changes, ADMIN, request).plan  # planned before the winner wrote
    won = put(admin, NODE, CONFIRMED)
    assert won.status_code == 200, won.text
    winner = won.json()["changeId"]

    with (
        writer_for(runtime.changes, ADMIN) as plugin_writer,
        pytest.raises(ConcurrentChange) as lost,
    ):
        record = split_record(losing, Authored(change_id(NOW, "b0b"), "bob", NOW))
        SplitWriter(plugin_writer).apply(losing, record=record)

    assert lost.value.winner == winner
    assert f"by change {winner}" in str(lost.value)
    assert cluster_status(lost.value) == 409
    assert daemonsets(admin) == sorted([SHARED, OWN])  # the winner's split stands


def test_an_applied_split_and_its_undo_each_leave_one_audit_line(
    admin: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="gpu_slots.audit"):
        applied = put(admin, NODE, CONFIRMED)
        assert applied.status_code == 200, applied.text
        change = applied.json()["changeId"]
        undone = admin.client.post(
            f"/api/v1/changes/{change}/rollback",
            json={"confirmHostProcesses": True},
            params={"force": "true"},
            headers={"Authorization": "Bearer test-admin-token"},
        )
        assert undone.status_code == 200, undone.text
    # the audit's fields come through `extra=`, into each record's __dict__
    lines = [r.__dict__ for r in caplog.records if r.name == "gpu_slots.audit"]
    assert [(r["kind"], r["node"], r["outcome"]) for r in lines] == [
        ("split", NODE, "applied"),
        ("rollback", NODE, "applied"),
    ]
    assert lines[0]["change_id"] == change
    assert lines[1]["rolls_back"] == change
