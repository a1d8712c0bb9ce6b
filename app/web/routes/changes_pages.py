"""The change history page and undoing a change: /admin/changes and its rollback forms.

The history lives in the cluster as labelled ConfigMaps (app.domain.changes.durable, read
through app.web.services.changes.listing); the page lists it, with the labelled objects that
hold no readable record shown apart (never a crash, never a rollback). It is the one place
to undo: each change says how it ended (done, rolling out, held at a node, undone) and one
that can be undone has one "Undo", which opens the same preview and confirmation as any
change (a mode change's as the plugin pages show it, a split's on its node's editor). The
plugin page's Undo of the newest mode change posts to these same routes.
"""

from __future__ import annotations

import shlex

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.domain.changes.durable import HistoryListing
from app.errors import ClusterError
from app.web.auth.requests import get_auth
from app.web.deps import FormWriteDep, RuntimeDep
from app.web.http.admin_forms import FORM_REFUSALS, ApplyChoicesDep, ChangeId, render_admin
from app.web.http.html import translator
from app.web.http.mode_render import (
    UNDO_MODE_PATH,
    after_mode_write,
    choose_first_page,
    error_page,
    fix_first_page,
    mode_preview_page,
)
from app.web.http.split_render import (
    NodeField,
    SplitFormDep,
    editor_page,
    editor_refused,
    to_editor,
)
from app.web.services.changes.listing import (
    change_listing,
    outcomes,
    preview_rollback,
    preview_undo_mode,
    rollback_change,
)
from app.web.services.changes.mode_rollout import RolloutWouldHold
from app.web.services.changes.pipeline import Asked
from app.web.services.changes.rollout_view import rollout_view
from app.web.views.change_words import gpu_names, unreadable_text

router = APIRouter(include_in_schema=False)
CHANGES_PATH = "/admin/changes"


@router.get(CHANGES_PATH, response_class=HTMLResponse)
def changes_page(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    t = translator(request)
    listing = HistoryListing(())
    error: str | None = None
    available = runtime.writer is not None
    if available:
        try:
            listing = change_listing(runtime.changes)
        except ClusterError as exc:
            error = str(exc)
    principal = get_auth(request).identify(request, for_write=False)
    ended = outcomes(listing.records, rollout_view(runtime.changes)) if available else {}
    namespace = runtime.settings.history_namespace
    return render_admin(
        request,
        runtime,
        "admin/changes.html",
        title=t("title_changes"),
        status_code=502 if error else 200,
        records=listing.records,
        outcomes=ended,
        gpu_names=gpu_names(runtime.snapshots.current(), t),
        principal=principal,
        unverified=listing.unverified,
        unreadable=[
            (entry, unreadable_text(entry, t.lang), _inspect_command(namespace, entry.name))
            for entry in listing.unreadable
        ],
        history_namespace=namespace,
        history_keep=runtime.settings.change_history_keep,
        available=available,
        error=error,
    )


def _inspect_command(namespace: str, name: str) -> str:
    """kubectl showing one record's ConfigMap; both names quoted (they come from the API)."""
    return f"kubectl -n {shlex.quote(namespace)} get configmap {shlex.quote(name)} -o yaml"


# undoing a split: previewed and confirmed on its node's editor ------------------------------


@router.post(f"{CHANGES_PATH}/{{change}}/rollback/preview", response_class=HTMLResponse)
def change_rollback_preview(change: ChangeId, post: FormWriteDep, node: NodeField) -> HTMLResponse:
    """What undoing a split change would do, with the host-process confirmation of a split."""
    request, runtime = post.request, post.runtime
    try:
        shown = preview_rollback(runtime.changes, post.admin(), change)
    except FORM_REFUSALS as error:
        return editor_refused(request, runtime, node, error)
    return editor_page(request, runtime, node, preview=shown, action="rollback", rolls_back=change)


@router.post(f"{CHANGES_PATH}/{{change}}/rollback")
def change_rollback(
    change: ChangeId, post: FormWriteDep, node: NodeField, form: SplitFormDep
) -> Response:
    """Undo split change `change` as previewed on the node's editor (its apply form)."""
    try:
        done = rollback_change(
            post.runtime.changes,
            Asked(post.acting(), dry_run=False, expected=form.token),
            change,
            confirm_host_processes=form.confirmed,
        )
    except FORM_REFUSALS as error:
        return editor_refused(post.request, post.runtime, node, error)
    return to_editor(post.request, node, getattr(done, "changeId", None))


# undoing a mode change: previewed and confirmed as the plugin pages show a change ----------


@router.post(f"{UNDO_MODE_PATH}/preview", response_class=HTMLResponse)
def mode_undo_preview(change: ChangeId, post: FormWriteDep) -> HTMLResponse:
    """What undoing mode change `change` would do, before the admin confirms it."""
    try:
        principal = post.admin()
        shown = preview_undo_mode(post.runtime.changes, principal, change)
    except FORM_REFUSALS as error:
        return error_page(post.request, post.runtime, error)
    return mode_preview_page(post.request, post.runtime, shown, principal, change)


@router.post(UNDO_MODE_PATH)
def mode_undo(change: ChangeId, post: FormWriteDep, choices: ApplyChoicesDep) -> Response:
    """Undo mode change `change` as previewed (recorded as a rollback naming it)."""
    request, runtime = post.request, post.runtime
    try:
        admin = post.acting()
        if choices.fix_first:
            return fix_first_page(request, runtime)
        asked = Asked(admin, dry_run=False, expected=choices.token)
        rollback_change(runtime.changes, asked, change, pass_failing=choices.pass_failing)
    except RolloutWouldHold as held:
        return choose_first_page(request, runtime, held)
    except FORM_REFUSALS as error:
        return error_page(request, runtime, error)
    return after_mode_write(request, runtime, ())
