"""JSON API for the plugin's mode: read it, preview or apply a change, roll it back.

Thin: the use cases live in app.web.services.plugin_admin, shared with the admin pages.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from app.domain.changes.models import ChangeRequest, PlanRefused, RefusalCode
from app.errors import ClusterError
from app.web.auth.state import Principal, require_admin_api
from app.web.deps import RuntimeDep
from app.web.services.plugin_admin import (
    audit_user,
    change_mode,
    config_view,
    http_error,
    refusal_status,
)
from app.web.views.admin_schemas import ModeAppliedOut, ModePreviewOut, NoChangeOut
from app.web.views.schemas import ProblemOut

router = APIRouter(prefix="/api/v1/plugin", tags=["plugin config"])


# schemas ---------------------------------------------------------------------------------


class PluginConfigIn(BaseModel):
    """The requested plugin mode."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["basic", "time-slicing"]
    replicas: StrictInt | None = Field(default=None, description="2..64, for time-slicing")
    renameByDefault: StrictBool = False
    failRequestsGreaterThanOne: StrictBool = False
    deleteConfigMap: StrictBool = Field(
        default=False, description="Delete the ConfigMap when switching to basic"
    )
    expectedResourceVersions: dict[Literal["daemonset", "configmap"], str | None] | None = Field(
        default=None, description="resourceVersions seen at preview; a mismatch is a 409"
    )

    def to_request(self) -> ChangeRequest:
        if self.mode == "time-slicing" and self.replicas is None:
            raise PlanRefused(RefusalCode.OUT_OF_RANGE, "replicas is required for time-slicing.")
        return ChangeRequest(
            mode=self.mode,
            replicas=self.replicas if self.replicas is not None else 1,
            rename_by_default=self.renameByDefault,
            fail_requests_greater_than_one=self.failRequestsGreaterThanOne,
            delete_configmap=self.deleteConfigMap,
        )


class RollbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expectedResourceVersions: dict[Literal["daemonset", "configmap"], str | None] | None = None


# routes ----------------------------------------------------------------------------------


def _problem(description: str) -> dict[str, Any]:
    return {"model": ProblemOut, "description": description}


WRITE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _problem("The body is not JSON"),
    401: _problem("No or wrong credentials"),
    403: _problem("Not an admin, missing CSRF token, or RBAC refused"),
    404: _problem("DaemonSet (or the previous config) not found"),
    409: _problem("Changed since the preview, or the DaemonSet cannot be edited"),
    422: _problem("Values out of range"),
    429: _problem("Too many failed authentications from this address"),
    502: _problem("A write failed; the detail says which state the cluster is in"),
    503: _problem("API server unreachable, or writes not enabled"),
}


@router.get("/config", responses={401: _problem("Reads need a login")})
def get_config(runtime: RuntimeDep) -> dict[str, Any]:
    """The plugin's current mode and settings, resourceVersions, and what rollback offers."""
    return config_view(runtime)


ModeOut = ModePreviewOut | ModeAppliedOut | NoChangeOut


@router.put("/config", responses=WRITE_ERRORS, response_model=ModeOut)
def put_config(
    body: PluginConfigIn,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(require_admin_api)],
    dry_run: Annotated[bool, Query(alias="dryRun")] = False,
) -> ModeOut:
    """Preview (`?dryRun=true`) or apply a mode change."""
    try:
        change = body.to_request()
    except PlanRefused as refused:
        raise HTTPException(refusal_status(refused), refused.message) from refused
    expected = body.expectedResourceVersions
    try:
        return change_mode(
            runtime,
            principal,
            change,
            {str(k): v for k, v in expected.items()} if expected is not None else None,
            dry_run=dry_run,
            user=audit_user(principal, request),
        )
    except (PlanRefused, ClusterError) as error:
        raise http_error(error) from error


@router.post("/config/rollback", responses=WRITE_ERRORS, response_model=ModeOut)
def post_rollback(
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(require_admin_api)],
    body: RollbackIn | None = None,
    dry_run: Annotated[bool, Query(alias="dryRun")] = False,
) -> ModeOut:
    """Restore the config kept from before the last mode change."""
    expected = body.expectedResourceVersions if body is not None else None
    try:
        return change_mode(
            runtime,
            principal,
            None,
            {str(k): v for k, v in expected.items()} if expected is not None else None,
            dry_run=dry_run,
            user=audit_user(principal, request),
        )
    except (PlanRefused, ClusterError) as error:
        raise http_error(error) from error
