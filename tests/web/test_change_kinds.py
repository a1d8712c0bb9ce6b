"""Every kind of change a record names is one ChangeKind the pipeline runs (issue 47)."""

from __future__ import annotations

from typing import get_args

from app.domain.changes.history import RecordKind
from app.web.services.changes.gpu_split import SPLIT
from app.web.services.changes.kinds import KINDS
from app.web.services.changes.plugin_admin import MODE


def test_every_kind_a_record_names_has_its_change_kind() -> None:
    assert set(KINDS) == set(get_args(RecordKind))
    assert (KINDS["mode"], KINDS["split"]) == (MODE, SPLIT)
