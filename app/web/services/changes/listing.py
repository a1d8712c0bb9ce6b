"""The change list (every mode and split change recorded) and rolling one change back.

The history lives in the cluster (app.domain.changes.durable, app.kube.history): one
ConfigMap per change in the dashboard's namespace, each carrying its whole record, so a
change stays listed and can be undone long after its Event is gone. Rolling back a change plans the
way from the cluster as it is now to the change's `before`, through the same preview and
apply as any change, and records itself as a new entry that names the one it undid. The
plugin's own rollback (`POST /api/v1/plugin/config/rollback`, the plugin page's Undo) is the
same: it undoes the newest mode change of this history, one undo per change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.domain.changes.durable import HistoryListing, StoredRecord, UnreadableRecord
from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import PlanRefused, RefusalCode
from app.errors import ClusterError
from app.i18n.coded import worded_values
from app.i18n.translate import DEFAULT_LANGUAGE
from app.web.auth.principal import Principal
from app.web.services.changes.gpu_split import SPLIT, SplitPreview, preview_split
from app.web.services.changes.kinds import undo
from app.web.services.changes.pipeline import (
    Asked,
    ChangeContext,
    check_token,
    get_writer,
    or_no_change,
    preview_change,
    writer_for,
)
from app.web.services.changes.plugin_admin import MODE, Preview, config_json, mode_objects
from app.web.services.changes.rollout_view import RolloutView
from app.web.views.admin_schemas import (
    ChangeOut,
    ChangesOut,
    ModeAppliedOut,
    ModePreviewOut,
    NoChangeOut,
    UnreadableChangeOut,
)
from app.web.views.change_words import unreadable_text, warning_texts
from app.web.views.split_schemas import SplitAppliedOut, SplitPreviewOut

RollbackOut = ModePreviewOut | ModeAppliedOut | SplitPreviewOut | SplitAppliedOut | NoChangeOut
ModeRollbackOut = ModePreviewOut | ModeAppliedOut | NoChangeOut


def change_listing(ctx: ChangeContext) -> HistoryListing:
    """Every recorded change, newest first, and the unreadable records (fresh from the API)."""
    store = get_writer(ctx).history
    return store.listing() if store is not None else HistoryListing(())


OutcomeState = Literal["done", "rolling-out", "held", "stuck", "undone"]


@dataclass(frozen=True)
class Outcome:
    """Where one listed change stands: done, still rolling out (held at `nodes`, stuck),
    or undone by a later change (`by`)."""

    state: OutcomeState
    nodes: tuple[str, ...] = ()
    by: str | None = None


def outcomes(records: Sequence[ChangeRecord], rollout: RolloutView) -> dict[str, Outcome]:
    """Each record's outcome: the latest mode change follows its rollout, an undone one
    names its undoing, any other is done (its writes went through)."""
    undone_by = {r.rolls_back: r.id for r in records if r.rolls_back}
    following = rollout.record.change_id if rollout.record is not None else None
    found: dict[str, Outcome] = {}
    for record in records:
        if record.id in undone_by:
            found[record.id] = Outcome("undone", by=undone_by[record.id])
        elif record.id == following and rollout.state in ("rolling-out", "stuck"):
            if rollout.held_by:
                found[record.id] = Outcome("held", nodes=rollout.held_by)
            else:
                found[record.id] = Outcome("stuck" if rollout.stuck else "rolling-out")
        else:
            found[record.id] = Outcome("done")
    return found


@dataclass(frozen=True)
class ModeUndo:
    """The plugin's Undo: the newest mode change, undone as the change list undoes it."""

    change: str
    before: dict[str, Any]  # what undoing it restores: the settings before it (JSON)
    offered: bool  # in one click, as the change list offers it: a change this dashboard signed


def _newest_mode(listing: HistoryListing) -> ChangeRecord | None:
    return next((r for r in listing.records if r.kind == "mode"), None)


def mode_undo(ctx: ChangeContext) -> ModeUndo | None:
    """What the plugin's Undo undoes (None: no mode change recorded, or no history)."""
    if ctx.writer is None:
        return None
    listing = change_listing(ctx)
    record = _newest_mode(listing)
    if record is None:
        return None
    offered = listing.verified(record) and record.action == "change"
    return ModeUndo(record.id, record.as_json()["before"], offered)


def newest_mode_change(ctx: ChangeContext, principal: Principal, expected: str | None) -> str:
    """The id of the newest mode change recorded: the one the plugin's rollback undoes.

    Without one, a preview's token is still checked first, as for any change (a bad one is
    a 422 even with nothing to undo), and then the answer is PlanRefused(NO_PREVIOUS).
    """
    record = _newest_mode(change_listing(ctx))
    if record is not None:
        return record.id
    if expected is not None:
        with writer_for(ctx, principal) as writer:
            objects = writer.read()
        check_token(expected, mode_objects(ctx, objects.daemonset, objects.configmap))
    raise PlanRefused(RefusalCode.NO_PREVIOUS, "no-previous-config")


def config_with_undo(ctx: ChangeContext) -> dict[str, Any]:
    """The plugin's mode for the API, `previous` being what its rollback restores (the
    settings before the newest mode change; None without one, or when the history is not
    readable)."""
    view = config_json(ctx)
    try:
        undo = mode_undo(ctx)
    except ClusterError:
        undo = None
    view["previous"] = worded_values(undo.before) if undo is not None else None
    return view


def undo_newest_mode(ctx: ChangeContext, asked: Asked, *, pass_failing: bool) -> ModeRollbackOut:
    """The plugin's rollback: the newest mode change undone through `rollback_change`, as
    from the change list (the same preview, token, writer and record)."""
    newest = newest_mode_change(ctx, asked.admin.principal, asked.expected)
    answer = rollback_change(ctx, asked, newest, pass_failing=pass_failing)
    assert isinstance(answer, ModePreviewOut | ModeAppliedOut | NoChangeOut)  # a mode record
    return answer


def changes_out(ctx: ChangeContext, lang: str = DEFAULT_LANGUAGE) -> ChangesOut:
    """`GET /api/v1/changes`: every change recorded, newest first, and the unreadable records
    (none, and `available` false, while plugin changes are not enabled)."""
    if ctx.writer is None:
        return ChangesOut(changes=[], available=False)
    listing = change_listing(ctx)
    return ChangesOut(
        changes=[change_out(r, verified=listing.verified(r), lang=lang) for r in listing.records],
        unreadable=[unreadable_out(u, lang) for u in listing.unreadable],
        available=True,
    )


def change_out(record: ChangeRecord, *, verified: bool, lang: str = DEFAULT_LANGUAGE) -> ChangeOut:
    data = record.as_json()
    settings = {side: worded_values(data[side]) for side in ("before", "after")}
    warnings = warning_texts(record.warnings, lang)
    return ChangeOut.model_validate(
        {**data, **settings, "warnings": warnings, "verified": verified}
    )


def unreadable_out(entry: UnreadableRecord, lang: str = DEFAULT_LANGUAGE) -> UnreadableChangeOut:
    at = entry.created_at
    return UnreadableChangeOut(
        name=entry.name,
        reason=unreadable_text(entry, lang),
        createdAt=at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None,
    )


def find_change(ctx: ChangeContext, change: str) -> StoredRecord:
    store = get_writer(ctx).history
    found = store.find(change) if store is not None else None
    if isinstance(found, UnreadableRecord):
        raise PlanRefused(
            RefusalCode.NOT_REVERSIBLE, "record-unreadable", change=change, unreadable=found
        )
    if found is None:
        raise PlanRefused(RefusalCode.CHANGE_NOT_FOUND, "change-not-found", change=change)
    return found


def _trusted(stored: StoredRecord, *, dry_run: bool, confirm_unverified: bool) -> ChangeRecord:
    """The record to undo; an unverified one only after its preview and an explicit confirm.

    A record this dashboard did not sign may have been written by anyone who can create
    ConfigMaps in its namespace: it is never replayed in one click (issue 33).
    """
    if not stored.verified and not dry_run and not confirm_unverified:
        raise PlanRefused(RefusalCode.UNVERIFIED, "unverified-record", change=stored.record.id)
    return stored.record


def rollback_change(
    ctx: ChangeContext,
    asked: Asked,
    change: str,
    *,
    confirm_host_processes: bool = False,
    pass_failing: bool | None = False,
    confirm_unverified: bool = False,
) -> RollbackOut:
    """Preview or apply the undoing of one change; raises PlanRefused/ClusterError."""
    stored = find_change(ctx, change)
    record = _trusted(stored, dry_run=asked.dry_run, confirm_unverified=confirm_unverified)

    def answer() -> RollbackOut:
        done = undo(ctx, asked, record, confirm=confirm_host_processes, pass_failing=pass_failing)
        return done.out(asked.lang)

    return or_no_change(answer, asked)


def preview_rollback(ctx: ChangeContext, principal: Principal, change: str) -> SplitPreview:
    """The preview of undoing split change `change` (the editor shows it before applying)."""
    record = find_change(ctx, change).record
    if record.kind != "split":
        raise PlanRefused(RefusalCode.NOT_REVERSIBLE, "mode-change-elsewhere", change=change)
    return preview_split(ctx, principal, SPLIT.undo(record, confirm=False), rollback=True)


def preview_undo_mode(ctx: ChangeContext, principal: Principal, change: str) -> Preview:
    """The preview of undoing mode change `change` (the change list shows it to confirm)."""
    record = find_change(ctx, change).record
    return preview_change(ctx, principal, MODE, MODE.undo(record, confirm=False), rollback=True)
