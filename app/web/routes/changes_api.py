"""JSON API for the change history: every mode and split change, and undoing one.

Thin: the use cases are app.web.services.changes.listing (shared with the change list page
and with the plugin's own rollback, which undoes the newest mode change).
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field, StrictBool

from app.web.deps import Lang, RuntimeDep, WriteDep
from app.web.http.admin_forms import ChangeId
from app.web.http.body_keys import CamelBody
from app.web.http.errors import SPLIT_READ_ERRORS, WRITE_ERRORS
from app.web.services.changes.listing import RollbackOut, changes_out, rollback_change
from app.web.views.admin_schemas import ChangesOut

# the tag the OpenAPI document has always given them: the history began with the splits
router = APIRouter(prefix="/api/v1", tags=["gpu split"])

TOKEN = "The preview's `token`: a 409 naming what moved if someone else edited what it read"


class SplitRollbackIn(CamelBody):
    """Undo one change of the history."""

    # named so since the OpenAPI document's first version; it undoes a change of either kind
    confirmHostProcesses: StrictBool = False
    """Roll back although host processes run on GPUs going to Kubernetes"""
    expectedToken: str | None = Field(default=None, max_length=16384, description=TOKEN)
    passFailingNodes: StrictBool = False
    """A mode change's rollback: let it pass failing plugin pods"""
    confirmUnverified: StrictBool = False
    """Apply the rollback of a record this dashboard did not sign (after preview)"""


@router.get("/changes", response_model=ChangesOut, responses=SPLIT_READ_ERRORS)
def get_changes(runtime: RuntimeDep, lang: Lang) -> ChangesOut:
    """Every mode and split change applied, newest first (kept in the cluster as ConfigMaps)."""
    return changes_out(runtime.changes, lang)


@router.post("/changes/{change}/rollback", responses=WRITE_ERRORS, response_model=RollbackOut)
def post_change_rollback(
    change: ChangeId, write: WriteDep, body: SplitRollbackIn | None = None
) -> RollbackOut:
    """Undo one change of the history (`?dryRun=true`: its preview)."""
    body = body or SplitRollbackIn()
    return rollback_change(
        write.changes,
        write.asked(body.expectedToken),
        change,
        confirm_host_processes=body.confirmHostProcesses,
        pass_failing=body.passFailingNodes,
        confirm_unverified=body.confirmUnverified,
    )
