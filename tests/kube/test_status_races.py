"""A DaemonSet replace survives its controller's status writes, never someone's edit."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import ConflictError
from app.kube.status_races import replace_despite_status_writes

SEEN = {"metadata": {"uid": "u1", "generation": 3, "labels": {"a": "b"}, "resourceVersion": "10"}}


def _conflicts(times: int) -> tuple[list[str], Any]:
    sent: list[str] = []

    def replace(body: dict[str, Any]) -> dict[str, Any]:
        sent.append(body["metadata"]["resourceVersion"])
        if len(sent) <= times:
            raise ConflictError("the object has been modified", status=409, reason="Conflict")
        return body

    return sent, replace


def test_a_status_write_in_between_is_retried_with_the_fresh_version() -> None:
    sent, replace = _conflicts(1)
    fresh = {
        "metadata": {**SEEN["metadata"], "resourceVersion": "11"},
        "status": {"numberReady": 2},
    }

    written = replace_despite_status_writes(replace, lambda: fresh, SEEN, seen=SEEN)

    assert sent == ["10", "11"]
    assert written is not None and written["metadata"]["resourceVersion"] == "11"


@pytest.mark.parametrize(
    "edit", [{"generation": 4}, {"labels": {"a": "c"}}, {"annotations": {"x": "y"}}]
)
def test_someone_elses_edit_stays_a_conflict(edit: dict[str, Any]) -> None:
    sent, replace = _conflicts(1)
    fresh = {"metadata": {**SEEN["metadata"], "resourceVersion": "11", **edit}}

    with pytest.raises(ConflictError):
        replace_despite_status_writes(replace, lambda: fresh, SEEN, seen=SEEN)
    assert sent == ["10"]


def test_a_controller_that_never_settles_ends_in_a_conflict() -> None:
    sent, replace = _conflicts(99)
    fresh = {"metadata": {**SEEN["metadata"], "resourceVersion": "12"}}

    with pytest.raises(ConflictError):
        replace_despite_status_writes(replace, lambda: fresh, SEEN, seen=SEEN)
    assert len(sent) == 3
