"""The two bounds on what the dashboard keeps in memory that no request can grow past.

Revoked sessions (`MAX_REVOKED`): each logout is remembered until its cookie would expire;
past the bound the soonest to expire go first, so the newest logout always holds. Field-name
sets shared among stored reports (`MAX_SETS`): past the bound a model keeps its own set (it
costs memory, never a wrong answer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, create_model

from app.web.auth.revocations import MAX_REVOKED, RevokedSessions
from app.web.services.reports import model_memory
from app.web.services.reports.model_memory import MAX_SETS, share_fields_sets

NOW = 1_800_000_000.0


def test_past_max_revoked_the_soonest_to_expire_go_and_the_newest_logout_holds(
    tmp_path: Path,
) -> None:
    assert MAX_REVOKED == 100_000  # the value docs/RELIABILITY.md states
    path = tmp_path / "revoked.json"
    # A full file, as another replica would have left it: expiries an hour or more away.
    path.write_text(json.dumps({f"s{i}": NOW + 3600 + i for i in range(MAX_REVOKED)}))
    sessions = RevokedSessions(path, clock=lambda: NOW)
    assert "s0" in sessions

    sessions.revoke("newest", until=NOW + 3600 + MAX_REVOKED)

    kept = json.loads(path.read_text())
    assert len(kept) == MAX_REVOKED
    assert "newest" in sessions and "newest" in kept
    assert "s0" not in kept and "s0" not in sessions  # it expired soonest
    assert "s1" in sessions


def test_a_full_revocation_file_of_expired_ids_is_emptied_on_the_next_logout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "revoked.json"
    path.write_text(json.dumps({f"old{i}": NOW - 1 for i in range(1000)}))
    sessions = RevokedSessions(path, clock=lambda: NOW)
    sessions.revoke("now", until=NOW + 60)
    assert json.loads(path.read_text()) == {"now": NOW + 60}


def _model_with(names: list[str]) -> BaseModel:
    kind = create_model("Reading", **{name: (int | None, None) for name in names})  # type: ignore[call-overload]
    return kind(**dict.fromkeys(names, 1))  # type: ignore[no-any-return]


def test_past_max_sets_a_model_keeps_its_own_field_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_SETS == 4_096  # the value docs/RELIABILITY.md states
    shared: dict[frozenset[str], set[str]] = {}
    monkeypatch.setattr(model_memory, "_SETS", shared)
    share_fields_sets(_model_with(["f0"]))
    for i in range(1, MAX_SETS):  # the other sets, as models of other shapes would leave them
        shared[frozenset({f"f{i}"})] = {f"f{i}"}

    first, again = _model_with(["f0"]), _model_with(["f0"])
    share_fields_sets(first)
    share_fields_sets(again)
    assert first.__pydantic_fields_set__ is again.__pydantic_fields_set__  # still shared

    beyond = _model_with(["beyond"])
    own = beyond.__pydantic_fields_set__
    share_fields_sets(beyond)
    assert len(shared) == MAX_SETS  # the map grows no further
    assert beyond.__pydantic_fields_set__ is own == {"beyond"}  # kept, and still right
