"""The change history page: every mode and split change, newest first, from the cluster.

The history lives in the cluster as labelled ConfigMaps (app.domain.changes.durable, read
through app.web.services.change_history); this page only lists it, with the labelled objects that
hold no readable record shown apart (never a crash, never a rollback). Rolling a mode
change back goes through the plugin form's preview and confirmation.
"""

from __future__ import annotations

import shlex

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.domain.changes.durable import HistoryListing
from app.errors import ClusterError
from app.web.auth.requests import get_auth
from app.web.deps import RuntimeDep
from app.web.http.html import html_response
from app.web.i18n.translate import CATALOGS, Translator, language_of
from app.web.services.change_history import change_listing
from app.web.views.change_words import unreadable_text

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
    html = runtime.templates.get_template("admin/changes.html").render(
        {
            "t": t,
            "lang": lang,
            "languages": list(CATALOGS),
            "title": t("title_changes"),
            "path": request.url.path,
            "live_url": None,
            "records": listing.records,
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
