"""Every kind of change by the name its records carry, and undoing a record through its kind.

A record names its kind (`mode`, `split`); its kind (app.web.services.changes.pipeline's
`ChangeKind`) turns the record's typed `before` back into a request, planned, previewed and
written as any change of that kind, the new record naming the one it undoes. Nothing here
asks which kind a record is: a new kind of change is one more entry in KINDS.
"""

from __future__ import annotations

from typing import Any

from app.domain.changes.history import ChangeRecord, RecordKind
from app.web.services.changes.gpu_split import SPLIT
from app.web.services.changes.pipeline import (
    Asked,
    ChangeApplied,
    ChangeContext,
    ChangeKind,
    ChangePreview,
    apply_change,
    preview_change,
)
from app.web.services.changes.plugin_admin import MODE

KINDS: dict[RecordKind, ChangeKind[Any, Any, ChangePreview, ChangeApplied]] = {
    "mode": MODE,
    "split": SPLIT,
}


def undo(
    ctx: ChangeContext,
    asked: Asked,
    record: ChangeRecord,
    *,
    confirm: bool,
    pass_failing: bool | None,
) -> ChangePreview | ChangeApplied:
    """Undoing `record`, planned from the cluster as it is now: its preview (`asked.dry_run`:
    nothing written), or its write, recorded as a rollback naming it. Raises
    PlanRefused/ClusterError."""
    kind = KINDS[record.kind]
    request = kind.undo(record, confirm=confirm)
    admin, expected = asked.admin, asked.expected
    if asked.dry_run:
        return preview_change(ctx, admin.principal, kind, request, rollback=True, expected=expected)
    return apply_change(
        ctx,
        admin,
        kind,
        request,
        expected,
        rollback=True,
        rolls_back=record.id,
        pass_failing=pass_failing,
    )
