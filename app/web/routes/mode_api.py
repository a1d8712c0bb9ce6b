"""JSON API for the plugin's mode: read it, preview or apply a change, roll it back.

Thin: the use cases live in app.web.services.changes.plugin_admin, shared with the mode pages; the
rollback undoes the newest mode change of the history (app.web.services.changes.listing),
exactly as `POST /api/v1/changes/{id}/rollback` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from fastapi import APIRouter
from pydantic import Field, StrictBool, StrictInt

from app.domain.changes.models import ChangeRequest, PlanRefused, RefusalCode
from app.web.deps import RuntimeDep, WriteDep
from app.web.http.body_keys import CamelBody
from app.web.http.errors import WRITE_ERRORS, problem
from app.web.services.changes.listing import config_with_undo, undo_newest_mode
from app.web.services.changes.plugin_admin import change_mode
from app.web.views.admin_schemas import ModeAppliedOut, ModePreviewOut, NoChangeOut

router = APIRouter(prefix="/api/v1/plugin", tags=["plugin config"])
PASS_DESCRIPTION = (
    "Let this rollout pass the nodes whose plugin pod already fails: maxUnavailable is "
    "raised by their count for this rollout and put back once it is done (recorded)"
)
TOKEN_DESCRIPTION = (
    "The preview's `token`: a 409 naming what moved if someone else edited the objects "
    "it planned from (a controller's status write does not count)"
)


# schemas ---------------------------------------------------------------------------------


class PluginConfigIn(CamelBody):
    """The requested plugin mode."""

    # the old spelling, still read through 0.1.x (docs/API.md)
    RENAMED: ClassVar[Mapping[str, str]] = {"allocation_policy": "allocationPolicy"}

    mode: Literal["basic", "time-slicing"]
    """basic | time-slicing"""
    replicas: StrictInt | None = None
    """2..64, for time-slicing"""
    renameByDefault: StrictBool = False
    """Advertise shared GPUs as <resource>.shared"""
    failRequestsGreaterThanOne: StrictBool = False
    """Refuse pods asking for 2+ shared slots"""
    deleteConfigMap: StrictBool = False
    """Delete the ConfigMap when switching to basic"""
    allocationPolicy: str | None = Field(default=None, max_length=32)
    """distributed | packed: flags.plugin.sharedDevicesAllocationPolicy (v0.20+; refused for an
    older plugin, which ignores it); unset: keep what the config says"""
    expectedToken: str | None = Field(default=None, max_length=16384, description=TOKEN_DESCRIPTION)
    passFailingNodes: StrictBool = Field(default=False, description=PASS_DESCRIPTION)

    def to_request(self) -> ChangeRequest:
        if self.mode == "time-slicing" and self.replicas is None:
            raise PlanRefused(RefusalCode.OUT_OF_RANGE, "replicas-required")
        return ChangeRequest(
            mode=self.mode,
            replicas=self.replicas if self.replicas is not None else 1,
            rename_by_default=self.renameByDefault,
            fail_requests_greater_than_one=self.failRequestsGreaterThanOne,
            delete_configmap=self.deleteConfigMap,
            allocation_policy=self.allocationPolicy,
        )


class ModeRollbackIn(CamelBody):
    """Restore the config kept from before the last mode change."""

    # "the config kept": the newest mode change's record (app.web.services.changes.listing)

    expectedToken: str | None = Field(default=None, max_length=16384, description=TOKEN_DESCRIPTION)
    passFailingNodes: StrictBool = Field(default=False, description=PASS_DESCRIPTION)


# routes ----------------------------------------------------------------------------------


@router.get("/config", responses={401: problem("Reads need a login")})
def get_config(runtime: RuntimeDep) -> dict[str, Any]:
    """The plugin's current mode and settings, resourceVersions, and what rollback offers."""
    return config_with_undo(runtime.changes)


ModeOut = ModePreviewOut | ModeAppliedOut | NoChangeOut


@router.put("/config", responses=WRITE_ERRORS, response_model=ModeOut)
def put_config(body: PluginConfigIn, write: WriteDep) -> ModeOut:
    """Preview (`?dryRun=true`) or apply a mode change."""
    asked = write.asked(body.expectedToken)
    return change_mode(write.changes, asked, body.to_request(), pass_failing=body.passFailingNodes)


@router.post("/config/rollback", responses=WRITE_ERRORS, response_model=ModeOut)
def post_rollback(write: WriteDep, body: ModeRollbackIn | None = None) -> ModeOut:
    """Restore the config kept from before the last mode change."""
    body = body or ModeRollbackIn()
    asked = write.asked(body.expectedToken)
    return undo_newest_mode(write.changes, asked, pass_failing=body.passFailingNodes)
