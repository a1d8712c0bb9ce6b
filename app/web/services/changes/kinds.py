"""Every kind of change by the name its records carry, and undoing a record through its kind.

A record names its kind (`mode`, `split`); its kind (app.web.services.changes.pipeline's
`ChangeKind`) turns the record's typed `before` back into a request, planned, previewed and
written as any change of that kind, the new record naming the one it undoes. Nothing here
asks which kind a record is: a new kind of change is one more entry in KINDS.
"""

from __future__ import annotations

from typing import Any

from app.domain.changes.history import ChangeRecord, RecordKind
from app.web.auth.principal import Admin, Principal
from app.web.services.changes.gpu_split import SPLIT
from app.web.services.changes.pipeline import (
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


def preview_undo(
    ctx: ChangeContext,
    principal: Principal,
    record: ChangeRecord,
    *,
    confirm: bool = False,
    expected: str | None = None,
) -> ChangePreview:
    """The preview of undoing `record` (nothing written); raises PlanRefused/ClusterError."""
    kind = KINDS[record.kind]
    request = kind.undo(record, confirm=confirm)
    return preview_change(ctx, principal, kind, request, rollback=True, expected=expected)


def apply_undo(
    ctx: ChangeContext,
    admin: Admin,
    record: ChangeRecord,
    expected: str | None,
    *,
    confirm: bool = False,
    pass_failing: bool | None = False,
) -> ChangeApplied:
    """Undo `record`: its `before` planned from the cluster as it is now, written and recorded
    as a rollback naming it."""
    kind = KINDS[record.kind]
    return apply_change(
        ctx,
        admin,
        kind,
        kind.undo(record, confirm=confirm),
        expected,
        rollback=True,
        rolls_back=record.id,
        pass_failing=pass_failing,
    )
