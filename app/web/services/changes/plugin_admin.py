"""The plugin-admin use cases, shared by the JSON API and the admin pages.

Read the plugin's mode, preview a change (diffs, server-side dry run, slots per node),
apply it with the resourceVersions seen at preview, roll it back. The mode change is one
`ChangeKind` (MODE), run by the change pipeline (app.web.services.changes.pipeline) as the
split is. The routers only turn HTTP into these calls and their answers (or refusals) back
into HTTP, so the form and the API can never disagree on what a change does or how it is
refused.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import ChangePlan, ChangeRequest, resource_version
from app.domain.changes.plan import current_settings, plan_change
from app.domain.changes.preview import NodeSlots, object_diff, slots_by_node
from app.domain.changes.records import Authored, mode_record, mode_undo_request
from app.domain.changes.rollout_record import Budget, RolloutRecord
from app.domain.cluster import Manifest
from app.domain.dra.install import read_dra_install
from app.domain.dra_models import DraInstall
from app.domain.plugin.daemonset import (
    is_operator_managed,
    is_plugin_daemonset,
    read_plugin_spec,
)
from app.domain.plugin.flags import ALLOCATION_POLICY_SINCE
from app.i18n.coded import worded_values
from app.i18n.translate import DEFAULT_LANGUAGE
from app.kube.writer import ApplyResult, DryRunResult, PluginWriter
from app.web.auth.principal import Admin, Principal
from app.web.services.changes import pipeline
from app.web.services.changes.mode_rollout import (
    FailingNodes,
    check_choice,
    failing_nodes,
    restore_when_done,
    with_rollout,
)
from app.web.services.changes.pipeline import Asked, ChangeContext
from app.web.views.admin_schemas import (
    DiffOut,
    ModeAppliedOut,
    ModePreviewOut,
    NoChangeOut,
    ServerDryRunOut,
)
from app.web.views.change_answers import node_slots_out, settings_out
from app.web.views.change_words import warning_texts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preview:
    """Everything the preview of a mode change shows."""

    plan: ChangePlan
    configmap_diff: str
    daemonset_diff: str
    dry_run: DryRunResult
    nodes: list[NodeSlots]
    token: str
    failing: FailingNodes

    def out(self, lang: str = DEFAULT_LANGUAGE) -> ModePreviewOut:
        return ModePreviewOut(
            kind=self.plan.kind,
            before=settings_out(self.plan.before.as_json()),
            after=settings_out(self.plan.after.as_json()),
            configmapAction=self.plan.configmap_action.value,
            rollsPods=self.plan.rolls_pods,
            resourceVersions=self.plan.resource_versions,
            token=self.token,
            diff=DiffOut(configmap=self.configmap_diff, daemonset=self.daemonset_diff),
            serverDryRun=ServerDryRunOut(
                ok=self.dry_run.ok,
                configmap=self.dry_run.configmap,
                daemonset=self.dry_run.daemonset,
            ),
            nodes=[node_slots_out(n) for n in self.nodes],
            failingNodes=sorted(self.failing.nodes),
            maxUnavailable=self.failing.max_unavailable,
            holdsAtMaxUnavailable=self.failing.holds,
            warnings=warning_texts(self.plan.warnings, lang),
        )


@dataclass(frozen=True)
class Applied:
    """A mode change as written."""

    plan: ChangePlan
    result: ApplyResult
    change_id: str | None
    rollout: RolloutRecord | None = None

    @property
    def generation(self) -> int:
        return int((self.result.daemonset.get("metadata") or {}).get("generation") or 0)

    def out(self, lang: str = DEFAULT_LANGUAGE) -> ModeAppliedOut:
        plan, result = self.plan, self.result
        return ModeAppliedOut(
            kind=plan.kind,
            before=settings_out(plan.before.as_json()),
            after=settings_out(plan.after.as_json()),
            configmapAction=plan.configmap_action.value,
            rollsPods=plan.rolls_pods,
            appliedAt=pipeline.iso(result.applied_at),
            generation=self.generation,
            resourceVersions={
                "daemonset": resource_version(result.daemonset),
                "configmap": resource_version(result.configmap),
            },
            warnings=warning_texts(plan.warnings + result.warnings, lang),
            changeId=self.change_id,
            maxUnavailable=budget.as_json() if (budget := self._budget()) is not None else None,
        )

    def _budget(self) -> Budget | None:
        return self.rollout.budget if self.rollout is not None else None


# the mode change -------------------------------------------------------------------------


def build_preview(
    ctx: ChangeContext, writer: PluginWriter, plan: ChangePlan, token: str
) -> Preview:
    """The preview of `plan` (`token`: of the objects it was made from)."""
    target = ctx.settings.plugin_target
    cm_title = f"configmap/{target.namespace}/{ctx.settings.plugin_configmap_name}"
    ds_title = f"daemonset/{target.ref}"
    cm_after = plan.configmap if plan.configmap is not None else plan.configmap_before
    if plan.configmap_action.value == "delete":
        cm_after = None
    failing = failing_nodes(ctx, plan)
    return Preview(
        plan=plan,
        configmap_diff=object_diff(plan.configmap_before, cm_after, title=cm_title),
        daemonset_diff=object_diff(plan.daemonset_before, plan.daemonset, title=ds_title),
        dry_run=writer.dry_run(plan),
        nodes=slots_by_node(
            ctx.snapshots.current(), plan.after, target=target.ref, failing=failing.nodes
        ),
        token=token,
        failing=failing,
    )


def mode_objects(
    ctx: ChangeContext, daemonset: Manifest | None, configmap: Manifest | None
) -> pipeline.ReadObjects:
    """The objects a mode plan is made from, keyed for the freshness token."""
    target = ctx.settings.plugin_target
    return {
        f"daemonset/{target.ref}": daemonset,
        f"configmap/{target.namespace}/{ctx.settings.plugin_configmap_name}": configmap,
    }


def make_plan(
    ctx: ChangeContext,
    writer: PluginWriter,
    request: ChangeRequest,
    *,
    expected: str | None = None,
) -> ChangePlan:
    """A plan from the objects as the API server holds them now.

    `expected` (the preview's token) is checked against those objects before planning, so a
    bad or stale token is refused even when nothing would change.
    """
    objects = writer.read()
    pipeline.check_token(expected, mode_objects(ctx, objects.daemonset, objects.configmap))
    return plan_change(
        objects.daemonset,
        objects.configmap,
        request,
        configmap_name=ctx.settings.plugin_configmap_name,
        dra_install=dra_install_of(ctx),
    )


def dra_install_of(ctx: ChangeContext) -> DraInstall | None:
    """The DRA driver install the cache sees, when no device plugin runs beside it."""
    daemonsets = ctx.source.items("daemonsets")
    if any(is_plugin_daemonset(ds) for ds in daemonsets):
        return None
    return read_dra_install(daemonsets, ctx.source.items("deviceclasses"), device_plugin=False)


class ModeKind:
    """The plugin's mode switch and its undo, a ChangeKind."""

    def plan(
        self,
        ctx: ChangeContext,
        writer: PluginWriter,
        request: ChangeRequest,
        *,
        rollback: bool,
        expected: str | None,
    ) -> tuple[ChangePlan, str]:
        plan = make_plan(ctx, writer, request, expected=expected)
        if rollback:
            plan = dataclasses.replace(plan, kind="rollback")
        return plan, pipeline.token_of(
            mode_objects(ctx, plan.daemonset_before, plan.configmap_before)
        )

    def preview(
        self, ctx: ChangeContext, writer: PluginWriter, plan: ChangePlan, token: str
    ) -> Preview:
        return build_preview(ctx, writer, plan, token)

    def write(
        self,
        ctx: ChangeContext,
        writer: PluginWriter,
        admin: Admin,
        plan: ChangePlan,
        request: ChangeRequest,
        *,
        rolls_back: str | None,
        pass_failing: bool | None,
    ) -> Applied:
        return write_mode(
            ctx, writer, admin, plan, pass_failing=pass_failing, rolls_back=rolls_back
        )

    def undo(self, record: ChangeRecord, *, confirm: bool) -> ChangeRequest:
        return mode_undo_request(record)


MODE = ModeKind()


def preview_mode(
    ctx: ChangeContext,
    principal: Principal,
    change: ChangeRequest,
    expected: str | None = None,
) -> Preview:
    """The preview of a mode change; raises PlanRefused/ClusterError."""
    return pipeline.preview_change(ctx, principal, MODE, change, expected=expected)


def apply_mode(
    ctx: ChangeContext,
    admin: Admin,
    change: ChangeRequest,
    expected: str | None,
    *,
    pass_failing: bool | None = False,
) -> Applied:
    """Write a mode change planned from the objects as they are now.

    `pass_failing` None: the admin has not chosen, refused (RolloutWouldHold) when failing
    nodes would hold the rollout.
    """
    return pipeline.apply_change(ctx, admin, MODE, change, expected, pass_failing=pass_failing)


def write_mode(
    ctx: ChangeContext,
    writer: PluginWriter,
    admin: Admin,
    plan: ChangePlan,
    *,
    pass_failing: bool | None,
    rolls_back: str | None = None,
) -> Applied:
    """Apply and record a planned mode change (its rollout record on the DaemonSet)."""
    passing = check_choice(ctx, plan, pass_failing)
    plan, rollout = with_rollout(ctx, plan, pass_failing=passing)
    assert rollout.change_id is not None
    made = Authored(
        rollout.change_id, admin.user, ctx.clock(), rolls_back=rolls_back, forced=admin.forced
    )
    record = mode_record(plan, made, rollout=rollout.as_json())
    result = writer.apply(plan, record=record)
    log.info(
        "plugin config %s applied",
        plan.kind,
        extra={"user": admin.user, "after": plan.after.as_json(), "forced": admin.forced},
    )
    pipeline.await_read_back(ctx, (result.daemonset, result.configmap))
    restore_when_done(ctx, pipeline.get_writer(ctx), rollout)
    ctx.snapshots.poke()
    return Applied(plan, result, result.change_id, rollout)


def change_mode(
    ctx: ChangeContext, asked: Asked, change: ChangeRequest, *, pass_failing: bool = False
) -> ModePreviewOut | ModeAppliedOut | NoChangeOut:
    """The JSON API's use case: preview or apply; no change is an answer, not an error."""
    admin, expected = asked.admin, asked.expected

    def answer() -> ModePreviewOut | ModeAppliedOut:
        if asked.dry_run:
            return preview_mode(ctx, admin.principal, change, expected).out(asked.lang)
        return apply_mode(ctx, admin, change, expected, pass_failing=pass_failing).out(asked.lang)

    return pipeline.or_no_change(answer, asked)


# reading the current mode ----------------------------------------------------------------


def config_view(ctx: ChangeContext) -> dict[str, Any]:
    """The current mode and settings, for the API and the form."""
    settings = ctx.settings
    daemonset, configmap = pipeline.cached_objects(ctx)
    view: dict[str, Any] = {
        "daemonset": {
            "name": settings.plugin_target.name,
            "namespace": settings.plugin_target.namespace,
            "found": daemonset is not None,
            "resourceVersion": resource_version(daemonset),
        },
        "configmap": {
            "name": settings.plugin_configmap_name,
            "exists": configmap is not None,
            "resourceVersion": resource_version(configmap),
        },
        "operatorManaged": daemonset is not None and is_operator_managed(daemonset),
        "draOnly": None,
        "writesEnabled": ctx.writer is not None,
    }
    if daemonset is None:
        install = dra_install_of(ctx)
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
    return view


def allocation_policy_offered(ctx: ChangeContext) -> bool:
    """Whether the plugin reads `sharedDevicesAllocationPolicy` (v0.20+; an unknown version
    is given the benefit of the doubt, as the planner does)."""
    daemonset, _ = pipeline.cached_objects(ctx)
    if daemonset is None:
        return False
    version = read_plugin_spec(daemonset).version
    return version is None or version >= ALLOCATION_POLICY_SINCE


def config_json(ctx: ChangeContext) -> dict[str, Any]:
    """`config_view` for the API: an unusable config's reason worded (the plugin's English)."""
    return worded_values(config_view(ctx))
