"""JSON API for the plugin's mode: read it, preview or apply a change, roll back.

The pages (app.web.admin_pages) use the same helpers, so the form and the API can never
disagree on what a change does or how it is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from app.domain.changes.models import ChangePlan, ChangeRequest, PlanRefused, RefusalCode
from app.domain.changes.plan import current_settings, plan_change, plan_rollback, previous_settings
from app.domain.changes.preview import NodeSlots, object_diff, slots_by_node
from app.domain.cluster import Manifest
from app.domain.plugin.daemonset import is_operator_managed
from app.errors import (
    ClusterError,
    ClusterUnavailableError,
    ConflictError,
    ForbiddenError,
    InvalidObjectError,
    NotFoundError,
)
from app.kube.writer import ApplyFailed, ApplyResult, DryRunResult, PluginWriter, check_versions
from app.web.auth import Principal, client_address, require_admin_api, require_reader
from app.web.deps import RuntimeDep
from app.web.runtime import Runtime
from app.web.schemas import ProblemOut

router = APIRouter(prefix="/api/v1/plugin", tags=["plugin config"])
log = logging.getLogger(__name__)

WRITER_KEY = "plugin_writer"
_REFUSAL_STATUS = {
    RefusalCode.DAEMONSET_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    RefusalCode.NO_PREVIOUS: status.HTTP_404_NOT_FOUND,
    RefusalCode.OUT_OF_RANGE: status.HTTP_422_UNPROCESSABLE_CONTENT,
}


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


# shared helpers (also used by the pages) -------------------------------------------------


@dataclass(frozen=True)
class Preview:
    """Everything the preview shows."""

    plan: ChangePlan
    configmap_diff: str
    daemonset_diff: str
    dry_run: DryRunResult
    nodes: list[NodeSlots]

    def as_json(self) -> dict[str, Any]:
        return {
            "changed": True,
            "dryRun": True,
            "kind": self.plan.kind,
            "before": self.plan.before.as_json(),
            "after": self.plan.after.as_json(),
            "configmapAction": self.plan.configmap_action.value,
            "rollsPods": self.plan.rolls_pods,
            "resourceVersions": self.plan.resource_versions,
            "diff": {"configmap": self.configmap_diff, "daemonset": self.daemonset_diff},
            "serverDryRun": {
                "ok": self.dry_run.ok,
                "configmap": self.dry_run.configmap,
                "daemonset": self.dry_run.daemonset,
            },
            "nodes": [
                {
                    "node": n.node,
                    "visibleGpus": n.visible_gpus,
                    "before": n.before,
                    "beforeResource": n.before_resource,
                    "after": n.after,
                    "afterResource": n.after_resource,
                    "held": n.held,
                    "podsOver": [
                        {"pod": p.pod, "slots": p.slots, "resource": p.resource, "reason": p.reason}
                        for p in n.pods
                    ],
                }
                for n in self.nodes
            ],
            "warnings": list(self.plan.warnings),
        }


def get_writer(runtime: Runtime) -> PluginWriter:
    writer = runtime.extras.get(WRITER_KEY)
    if not isinstance(writer, PluginWriter):
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, "Plugin changes are not enabled in this server."
        )
    return writer


@contextmanager
def writer_for(runtime: Runtime, principal: Principal) -> Iterator[PluginWriter]:
    """The writer acting as the principal (impersonation for proxy users)."""
    writer = get_writer(runtime)
    user = principal.user if principal.impersonate else None
    with writer.acting_as(user, principal.groups) as acting:
        yield acting


def audit_user(principal: Principal, request: Request) -> str:
    if principal.method == "proxy":
        return principal.user
    how = "bearer token" if principal.method == "bearer" else "token login"
    return f"{principal.user} ({how} from {client_address(request)})"


def refusal_status(refused: PlanRefused) -> int:
    return _REFUSAL_STATUS.get(refused.code, status.HTTP_409_CONFLICT)


def cluster_status(error: ClusterError) -> int:
    cause = error.cause if isinstance(error, ApplyFailed) else error
    for kind, code in (
        (ConflictError, status.HTTP_409_CONFLICT),
        (NotFoundError, status.HTTP_404_NOT_FOUND),
        (ForbiddenError, status.HTTP_403_FORBIDDEN),
        (InvalidObjectError, status.HTTP_422_UNPROCESSABLE_CONTENT),
        (ClusterUnavailableError, status.HTTP_503_SERVICE_UNAVAILABLE),
    ):
        if isinstance(cause, kind):
            return code
    return status.HTTP_502_BAD_GATEWAY


def build_preview(runtime: Runtime, writer: PluginWriter, plan: ChangePlan) -> Preview:
    namespace = runtime.settings.kubernetes_device_plugin_namespace
    cm_title = f"configmap/{namespace}/{runtime.settings.plugin_configmap_name}"
    ds_title = f"daemonset/{namespace}/{runtime.settings.kubernetes_device_plugin_name}"
    cm_after = plan.configmap if plan.configmap is not None else plan.configmap_before
    if plan.configmap_action.value == "delete":
        cm_after = None
    return Preview(
        plan=plan,
        configmap_diff=object_diff(plan.configmap_before, cm_after, title=cm_title),
        daemonset_diff=object_diff(plan.daemonset_before, plan.daemonset, title=ds_title),
        dry_run=writer.dry_run(plan),
        nodes=slots_by_node(runtime.snapshots.current(), plan.after),
    )


def make_plan(runtime: Runtime, writer: PluginWriter, request: ChangeRequest | None) -> ChangePlan:
    """A plan from the objects as the API server holds them now (None request: rollback)."""
    objects = writer.read()
    name = runtime.settings.plugin_configmap_name
    if request is None:
        return plan_rollback(objects.daemonset, objects.configmap, configmap_name=name)
    return plan_change(objects.daemonset, objects.configmap, request, configmap_name=name)


def apply_plan(
    writer: PluginWriter, plan: ChangePlan, *, principal: Principal, request: Request
) -> ApplyResult:
    result = writer.apply(plan, user=audit_user(principal, request))
    log.info(
        "plugin config %s applied",
        plan.kind,
        extra={"user": audit_user(principal, request), "after": plan.after.as_json()},
    )
    return result


def cached_objects(runtime: Runtime) -> tuple[Manifest | None, Manifest | None]:
    """The DaemonSet and ConfigMap as the watch cache holds them (no API call)."""
    settings = runtime.settings
    namespace = settings.kubernetes_device_plugin_namespace
    daemonsets = [
        ds
        for ds in runtime.source.items("daemonsets")
        if (ds.get("metadata") or {}).get("name") == settings.kubernetes_device_plugin_name
        and (ds.get("metadata") or {}).get("namespace") in (None, namespace)
    ]
    configmaps = [
        cm
        for cm in runtime.source.items("configmaps")
        if (cm.get("metadata") or {}).get("name") == settings.plugin_configmap_name
        and (cm.get("metadata") or {}).get("namespace") in (None, namespace)
    ]
    return (daemonsets[0] if daemonsets else None), (configmaps[0] if configmaps else None)


def config_view(runtime: Runtime) -> dict[str, Any]:
    """The current mode and settings, for the API and the form."""
    settings = runtime.settings
    daemonset, configmap = cached_objects(runtime)
    view: dict[str, Any] = {
        "daemonset": {
            "name": settings.kubernetes_device_plugin_name,
            "namespace": settings.kubernetes_device_plugin_namespace,
            "found": daemonset is not None,
            "resourceVersion": _rv(daemonset),
        },
        "configmap": {
            "name": settings.plugin_configmap_name,
            "exists": configmap is not None,
            "resourceVersion": _rv(configmap),
        },
        "operatorManaged": daemonset is not None and is_operator_managed(daemonset),
        "writesEnabled": isinstance(runtime.extras.get(WRITER_KEY), PluginWriter),
        "previous": None,
    }
    if daemonset is None:
        view.update(
            {
                "mode": "unknown",
                "replicas": 1,
                "resource": settings.serving_gpu_resource,
                "renameByDefault": False,
                "failRequestsGreaterThanOne": False,
                "error": "DaemonSet not found",
            }
        )
        return view
    view.update(current_settings(daemonset, configmap).as_json())
    previous = previous_settings(daemonset)
    view["previous"] = previous.as_json() if previous is not None else None
    return view


def _rv(obj: Manifest | None) -> str | None:
    if obj is None:
        return None
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return str(value) if value is not None else None


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


@router.get("/config", responses={401: _problem("Reads need a login"), 429: WRITE_ERRORS[429]})
def get_config(
    runtime: RuntimeDep, _: Annotated[Principal | None, Depends(require_reader)]
) -> dict[str, Any]:
    """The plugin's current mode and settings, resourceVersions, and what rollback offers."""
    return config_view(runtime)


@router.put(
    "/config",
    responses=WRITE_ERRORS,
)
def put_config(
    body: PluginConfigIn,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(require_admin_api)],
    dry_run: Annotated[bool, Query(alias="dryRun")] = False,
) -> dict[str, Any]:
    """Preview (`?dryRun=true`) or apply a mode change."""
    try:
        change = body.to_request()
    except PlanRefused as refused:
        raise HTTPException(refusal_status(refused), refused.message) from refused
    expected = body.expectedResourceVersions
    return _change(request, runtime, principal, change, dry_run=dry_run, expected=expected)


@router.post("/config/rollback", responses=WRITE_ERRORS)
def post_rollback(
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(require_admin_api)],
    body: RollbackIn | None = None,
    dry_run: Annotated[bool, Query(alias="dryRun")] = False,
) -> dict[str, Any]:
    """Restore the config kept from before the last change."""
    expected = body.expectedResourceVersions if body is not None else None
    return _change(request, runtime, principal, None, dry_run=dry_run, expected=expected)


def _change(
    request: Request,
    runtime: Runtime,
    principal: Principal,
    change: ChangeRequest | None,
    *,
    dry_run: bool,
    expected: dict[Literal["daemonset", "configmap"], str | None] | None,
) -> dict[str, Any]:
    try:
        with writer_for(runtime, principal) as writer:
            plan = make_plan(runtime, writer, change)
            if expected is not None:
                check_versions(plan, {str(k): v for k, v in expected.items()})
            if dry_run:
                return build_preview(runtime, writer, plan).as_json()
            result = apply_plan(writer, plan, principal=principal, request=request)
    except PlanRefused as refused:
        if refused.code is RefusalCode.NO_CHANGE:
            return {"changed": False, "dryRun": dry_run, "detail": refused.message}
        raise HTTPException(refusal_status(refused), refused.message) from refused
    except ClusterError as error:
        raise HTTPException(cluster_status(error), str(error)) from error
    runtime.snapshots.poke()
    return {
        "changed": True,
        "dryRun": False,
        "kind": plan.kind,
        "before": plan.before.as_json(),
        "after": plan.after.as_json(),
        "configmapAction": plan.configmap_action.value,
        "rollsPods": plan.rolls_pods,
        "appliedAt": _iso(result.applied_at),
        "generation": int((result.daemonset.get("metadata") or {}).get("generation") or 0),
        "resourceVersions": {
            "daemonset": _rv(result.daemonset),
            "configmap": _rv(result.configmap),
        },
        "warnings": list(plan.warnings) + list(result.warnings),
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
