"""The change history page: every mode and split change, newest first, from the cluster.

The history lives in the cluster as labelled ConfigMaps (app.domain.changes.durable, read
through app.web.services.change_history); this page only lists it, with the labelled objects that
hold no readable record shown apart (never a crash, never a rollback). It is the one place
to undo: each change says how it ended (done, rolling out, held at a node, undone) and one
that can be undone has one "Undo", which opens the same preview and confirmation as any
change (a mode change's on the admin pages, a split's on its node's editor).
"""

from __future__ import annotations

import shlex

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.domain.changes.durable import HistoryListing
from app.errors import ClusterError
from app.i18n.translate import CATALOGS, Translator
from app.web.auth.requests import get_auth
from app.web.auth.state import CSRF_FIELD
from app.web.deps import RuntimeDep
from app.web.http.html import html_response
from app.web.http.language import language_of
from app.web.services.change_history import change_listing, outcomes
from app.web.services.rollout_view import rollout_view
from app.web.views.change_words import gpu_names, unreadable_text

router = APIRouter(include_in_schema=False)
CHANGES_PATH = "/admin/changes"


@router.get(CHANGES_PATH, response_class=HTMLResponse)
def changes_page(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    lang = language_of(request)
    t = Translator(lang)
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
    html = runtime.templates.get_template("admin/changes.html").render(
        {
            "t": t,
            "lang": lang,
            "languages": list(CATALOGS),
            "title": t("title_changes"),
            "path": request.url.path,
            "live_url": None,
            "records": listing.records,
            "outcomes": ended,
            "gpu_names": gpu_names(runtime.snapshots.current(), t),
            "principal": principal,
            "csrf_field": CSRF_FIELD,
            "unverified": listing.unverified,
            "unreadable": [
                (
                    entry,
                    unreadable_text(entry, lang),
                    _inspect_command(runtime.settings.history_namespace, entry.name),
                )
                for entry in listing.unreadable
            ],
            "history_namespace": runtime.settings.history_namespace,
            "history_keep": runtime.settings.change_history_keep,
            "available": available,
            "error": error,
            "signed_in": principal.user if principal is not None else None,
        }
    )
    return html_response(html, status_code=502 if error else 200)


def _inspect_command(namespace: str, name: str) -> str:
    """kubectl showing one record's ConfigMap; both names quoted (they come from the API)."""
    return f"kubectl -n {shlex.quote(namespace)} get configmap {shlex.quote(name)} -o yaml"
