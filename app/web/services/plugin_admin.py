"""The plugin-admin use cases, shared by the JSON API and the admin pages.

Read the plugin's mode, preview a change (diffs, server-side dry run, slots per node),
apply it with the resourceVersions seen at preview, roll it back. The routers only turn
HTTP into these calls and their answers (or refusals) back into HTTP, so the form and
the API can never disagree on what a change does or how it is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from app.domain.changes.models import ChangePlan, ChangeRequest, PlanRefused, RefusalCode
from app.domain.changes.plan import current_settings, plan_change, plan_rollback, previous_settings
from app.domain.changes.preview import NodeSlots, object_diff, slots_by_node
from app.domain.cluster import Manifest
from app.domain.dra.install import read_dra_install
from app.domain.dra_models import DraInstall
from app.domain.plugin.daemonset import is_operator_managed, is_plugin_daemonset
from app.errors import WritesDisabledError
from app.kube.writer import ApplyResult, DryRunResult, PluginWriter, check_versions
from app.web.auth.principal import Admin, Principal
from app.web.runtime import Runtime
from app.web.views.admin_schemas import (
    DiffOut,
    ModeAppliedOut,
    ModePreviewOut,
    NoChangeOut,
    NodeSlotsOut,
    PluginSettingsOut,
    PodOverOut,
    ServerDryRunOut,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Preview:
    """Everything the preview of a mode change shows."""

    plan: ChangePlan
    configmap_diff: str
    daemonset_diff: str
    dry_run: DryRunResult
    nodes: list[NodeSlots]

    def out(self) -> ModePreviewOut:
        return ModePreviewOut(
            kind=self.plan.kind,
            before=settings_out(self.plan.before.as_json()),
            after=settings_out(self.plan.after.as_json()),
            configmapAction=self.plan.configmap_action.value,
            rollsPods=self.plan.rolls_pods,
            resourceVersions=self.plan.resource_versions,
            diff=DiffOut(configmap=self.configmap_diff, daemonset=self.daemonset_diff),
            serverDryRun=ServerDryRunOut(
                ok=self.dry_run.ok,
                configmap=self.dry_run.configmap,
                daemonset=self.dry_run.daemonset,
            ),
            nodes=[node_slots_out(n) for n in self.nodes],
            warnings=list(self.plan.warnings),
        )


@dataclass(frozen=True)
class Applied:
    """A mode change as written."""

    plan: ChangePlan
    result: ApplyResult
    change_id: str | None

    @property
    def generation(self) -> int:
        return int((self.result.daemonset.get("metadata") or {}).get("generation") or 0)

    def out(self) -> ModeAppliedOut:
        plan, result = self.plan, self.result
        return ModeAppliedOut(
            kind=plan.kind,
            before=settings_out(plan.before.as_json()),
            after=settings_out(plan.after.as_json()),
            configmapAction=plan.configmap_action.value,
            rollsPods=plan.rolls_pods,
            appliedAt=iso(result.applied_at),
            generation=self.generation,
            resourceVersions={
                "daemonset": _rv(result.daemonset),
                "configmap": _rv(result.configmap),
            },
            warnings=list(plan.warnings) + list(result.warnings),
            changeId=self.change_id,
        )


def settings_out(data: Mapping[str, Any]) -> PluginSettingsOut:
    return PluginSettingsOut.model_validate(dict(data))


def node_slots_out(n: NodeSlots) -> NodeSlotsOut:
    return NodeSlotsOut(
        node=n.node,
        visibleGpus=n.visible_gpus,
        before=n.before,
        beforeResource=n.before_resource,
        after=n.after,
        afterResource=n.after_resource,
        held=n.held,
        podsOver=[
            PodOverOut(pod=p.pod, slots=p.slots, resource=p.resource, reason=p.reason)
            for p in n.pods
        ],
    )


# writers, users and refusals -------------------------------------------------------------


def get_writer(runtime: Runtime) -> PluginWriter:
    writer = runtime.writer
    if writer is None:
        raise WritesDisabledError("Plugin changes are not enabled in this server.")
    return writer


@contextmanager
def writer_for(runtime: Runtime, principal: Principal) -> Iterator[PluginWriter]:
    """The writer acting as the principal (impersonation for proxy users)."""
    writer = get_writer(runtime)
    user = principal.user if principal.impersonate else None
    with writer.acting_as(user, principal.groups) as acting:
        yield acting


# the mode change -------------------------------------------------------------------------


def build_preview(runtime: Runtime, writer: PluginWriter, plan: ChangePlan) -> Preview:
    target = runtime.settings.plugin_target
    cm_title = f"configmap/{target.namespace}/{runtime.settings.plugin_configmap_name}"
    ds_title = f"daemonset/{target.ref}"
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
    return plan_change(
        objects.daemonset,
        objects.configmap,
        request,
        configmap_name=name,
        dra_install=dra_install_of(runtime),
    )


def dra_install_of(runtime: Runtime) -> DraInstall | None:
    """The DRA driver install the cache sees, when no device plugin runs beside it."""
    daemonsets = runtime.source.items("daemonsets")
    if any(is_plugin_daemonset(ds) for ds in daemonsets):
        return None
    return read_dra_install(daemonsets, runtime.source.items("deviceclasses"), device_plugin=False)


def preview_mode(
    runtime: Runtime,
    principal: Principal,
    change: ChangeRequest | None,
    expected: Mapping[str, str | None] | None = None,
) -> Preview:
    """The preview of a mode change (None: of the rollback); raises PlanRefused/ClusterError."""
    with writer_for(runtime, principal) as writer:
        plan = make_plan(runtime, writer, change)
        if expected is not None:
            check_versions(plan, expected)
        return build_preview(runtime, writer, plan)


def apply_mode(
    runtime: Runtime,
    admin: Admin,
    change: ChangeRequest | None,
    expected: Mapping[str, str | None] | None,
) -> Applied:
    """Write a mode change (None: the rollback) planned from the objects as they are now."""
    with writer_for(runtime, admin.principal) as writer:
        plan = make_plan(runtime, writer, change)
        if expected is not None:
            check_versions(plan, expected)
        result = writer.apply(plan, user=admin.user)
    log.info(
        "plugin config %s applied",
        plan.kind,
        extra={"user": admin.user, "after": plan.after.as_json()},
    )
    runtime.snapshots.poke()
    return Applied(plan, result, result.change_id)


def change_mode(
    runtime: Runtime,
    admin: Admin,
    change: ChangeRequest | None,
    expected: Mapping[str, str | None] | None,
    *,
    dry_run: bool,
) -> ModePreviewOut | ModeAppliedOut | NoChangeOut:
    """The JSON API's use case: preview or apply; no change is an answer, not an error."""

    def answer() -> ModePreviewOut | ModeAppliedOut:
        if dry_run:
            return preview_mode(runtime, admin.principal, change, expected).out()
        return apply_mode(runtime, admin, change, expected).out()

    return or_no_change(answer, dry_run=dry_run)


def or_no_change(answer: Callable[[], T], *, dry_run: bool) -> T | NoChangeOut:
    """`answer()`, or NoChangeOut when the planner finds nothing to change."""
    try:
        return answer()
    except PlanRefused as refused:
        if refused.code is RefusalCode.NO_CHANGE:
            return NoChangeOut(dryRun=dry_run, detail=refused.message)
        raise


# reading the current mode ----------------------------------------------------------------


def cached_objects(runtime: Runtime) -> tuple[Manifest | None, Manifest | None]:
    """The shared DaemonSet and its ConfigMap as the watch cache holds them (no API call)."""
    target = runtime.settings.plugin_target
    daemonset = next((ds for ds in runtime.source.items("daemonsets") if target.matches(ds)), None)
    configmap = next(
        (
            cm
            for cm in runtime.source.items("configmaps")
            if (cm.get("metadata") or {}).get("name") == runtime.settings.plugin_configmap_name
            and (cm.get("metadata") or {}).get("namespace") in (None, target.namespace)
        ),
        None,
    )
    return daemonset, configmap


def config_view(runtime: Runtime) -> dict[str, Any]:
    """The current mode and settings, for the API and the form."""
    settings = runtime.settings
    daemonset, configmap = cached_objects(runtime)
    view: dict[str, Any] = {
        "daemonset": {
            "name": settings.plugin_target.name,
            "namespace": settings.plugin_target.namespace,
            "found": daemonset is not None,
            "resourceVersion": _rv(daemonset),
        },
        "configmap": {
            "name": settings.plugin_configmap_name,
            "exists": configmap is not None,
            "resourceVersion": _rv(configmap),
        },
        "operatorManaged": daemonset is not None and is_operator_managed(daemonset),
        "draOnly": None,
        "writesEnabled": runtime.writer is not None,
        "previous": None,
    }
    if daemonset is None:
        install = dra_install_of(runtime)
        view["draOnly"] = install.model_dump() if install is not None else None
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


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
