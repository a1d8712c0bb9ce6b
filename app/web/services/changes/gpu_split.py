"""The per-node GPU split use cases, shared by the JSON API and the editor page.

Read which GPUs of a node Kubernetes gets and which DaemonSet decides it; preview a new
split (the writes as diffs, the server's dry run, slots before and after, host processes
on GPUs going to Kubernetes, pods on GPUs going to the host, plugin pods that restart);
apply it with the resourceVersions seen at preview; return the node to the shared
DaemonSet. The split is one `ChangeKind` (SPLIT), run by the change pipeline
(app.web.services.changes.pipeline) as the mode change is. The planner is
app.domain.changes.split; the writes app.kube.split_writer.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from app.domain.changes.history import ChangeRecord, change_id
from app.domain.changes.models import PlanRefused, RefusalCode
from app.domain.changes.preview import label_diff, object_diff
from app.domain.changes.records import Authored, split_record, split_undo_request
from app.domain.changes.split import check_confirmed, plan_split, split_state
from app.domain.changes.split_models import SplitPlan, SplitRequest, own_name
from app.domain.changes.split_scope import dra_held, node_gpus, split_refusal
from app.domain.cluster import Manifest
from app.domain.plugin.daemonset import is_operator_managed
from app.domain.snapshot import NodeState
from app.i18n.translate import DEFAULT_LANGUAGE
from app.kube.split_writer import SplitApplied, SplitObjects, SplitWriter
from app.kube.writer import PluginWriter
from app.web.auth.principal import Admin, Principal
from app.web.services.changes import pipeline
from app.web.services.changes.pipeline import Asked, ChangeContext
from app.web.views.admin_schemas import NoChangeOut
from app.web.views.change_answers import gpus_out, state_out
from app.web.views.change_words import warning_texts
from app.web.views.refusal_text import change_instead, refusal_text
from app.web.views.split_schemas import (
    GoverningOut,
    GpuSplitOut,
    RestartOut,
    SplitAppliedOut,
    SplitPreviewOut,
    SplitRefusalOut,
    SplitWriteOut,
)


@dataclass(frozen=True)
class SplitPreview:
    plan: SplitPlan
    diffs: dict[str, str]
    dry_run: dict[str, str | None]
    token: str

    @property
    def ok(self) -> bool:
        return all(v is None for v in self.dry_run.values())

    def out(self, lang: str = DEFAULT_LANGUAGE) -> SplitPreviewOut:
        plan = self.plan
        return SplitPreviewOut(
            kind=plan.kind,
            node=plan.node,
            before=state_out(plan.before),
            after=state_out(plan.after),
            slotsBefore=plan.slots_before,
            slotsAfter=plan.after.slots,
            writes=[
                SplitWriteOut(
                    action=w.action,
                    kind=w.kind,
                    name=w.name,
                    diff=self.diffs.get(w.key, ""),
                    serverDryRun=self.dry_run.get(w.key),
                )
                for w in plan.writes
            ],
            serverDryRunOk=self.ok,
            hostProcesses=list(plan.host_processes),
            blocking=plan.blocking,
            podsOnHostGpus=list(plan.pods_on_host_gpus),
            restarts=[RestartOut(code=r.code, params=r.params) for r in plan.restarts],
            resourceVersions=plan.resource_versions,
            token=self.token,
            warnings=warning_texts(plan.warnings, lang),
        )


def applied_out(
    plan: SplitPlan, applied: SplitApplied, lang: str = DEFAULT_LANGUAGE
) -> SplitAppliedOut:
    return SplitAppliedOut(
        kind=plan.kind,
        node=plan.node,
        before=state_out(plan.before),
        after=state_out(plan.after),
        slotsAfter=plan.after.slots,
        appliedAt=pipeline.iso(applied.applied_at),
        changeId=applied.change_id,
        warnings=warning_texts(plan.warnings + applied.warnings, lang),
    )


@dataclass(frozen=True)
class AppliedSplit:
    """A split as written: its plan and what the writer did."""

    plan: SplitPlan
    applied: SplitApplied

    @property
    def change_id(self) -> str | None:
        return self.applied.change_id

    def out(self, lang: str = DEFAULT_LANGUAGE) -> SplitAppliedOut:
        return applied_out(self.plan, self.applied, lang)


# the node's GPUs -------------------------------------------------------------------------


def node_state(ctx: ChangeContext, node: str) -> NodeState:
    snapshot = ctx.snapshots.current()
    for state in snapshot.nodes if snapshot is not None else []:
        if state.name == node:
            return state
    raise PlanRefused(RefusalCode.NODE_NOT_FOUND, "node-not-in-cluster", node=node)


def _shared_name(ctx: ChangeContext) -> str:
    return ctx.settings.plugin_target.name


def refused_view(
    ctx: ChangeContext, state: NodeState, refused: PlanRefused, lang: str = DEFAULT_LANGUAGE
) -> GpuSplitOut:
    """A node GPU Slots does not change: who governs it, its GPUs as they are, and why (in
    `lang`)."""
    owner = (state.config.daemonset if state.config is not None else None) or "-/-"
    namespace, _, name = owner.partition("/")
    return GpuSplitOut(
        node=state.name,
        daemonset=GoverningOut(name=name, namespace=namespace, own=False),
        mode=state.mode.value,
        replicas=state.replicas,
        allocatable=state.allocatable,
        gpus=gpus_out(
            state,
            lambda g: (g.role in ("advertised", "dra"), sum(h.slots for h in g.holders)),
        ),
        writesEnabled=ctx.writer is not None,
        operatorManaged=refused.code is RefusalCode.OPERATOR_MANAGED,
        editable=False,
        refusal=SplitRefusalOut(
            code=refused.code.value,
            reason=refusal_text(refused, lang),
            changeInstead=change_instead(refused, lang),
        ),
    )


def split_view(ctx: ChangeContext, node: str, lang: str = DEFAULT_LANGUAGE) -> GpuSplitOut:
    """GET: each GPU's role (from the DaemonSet that governs the node), slots and processes.

    A node GPU Slots may not change is described as it is, with the refusal (in `lang`), and
    no API read.
    """
    state = node_state(ctx, node)
    refused = split_refusal(state, target=ctx.settings.plugin_target.ref)
    if refused is not None:
        return refused_view(ctx, state, refused, lang)
    gpus = node_gpus(state)
    name = own_name(_shared_name(ctx), node)
    if ctx.writer is not None:
        objects = SplitWriter(ctx.writer).read(node, name)
    else:
        shared, configmap = pipeline.cached_objects(ctx)
        objects = SplitObjects(None, shared, configmap, None, None)
    if objects.shared is None:
        raise PlanRefused(RefusalCode.DAEMONSET_NOT_FOUND, "plugin-not-found")
    governing = _governing(objects)
    current = split_state(
        governing,
        objects.shared_configmap if governing is objects.shared else None,
        gpus,
        objects.node,
    )
    given = set(current.kubernetes_gpus)
    return GpuSplitOut(
        node=node,
        daemonset=GoverningOut(
            name=current.daemonset,
            namespace=ctx.settings.plugin_target.namespace,
            own=current.own,
        ),
        configKey=current.config_key,
        perNodeConfig=current.per_node_config,
        mode=current.mode,
        replicas=current.replicas,
        allocatable=state.allocatable,
        gpus=gpus_out(
            state, lambda g: (g.uuid in given, current.slots_per_gpu * (g.uuid in given))
        ),
        writesEnabled=ctx.writer is not None,
        operatorManaged=is_operator_managed(objects.shared),
    )


def _governing(objects: SplitObjects) -> Manifest:
    assert objects.shared is not None
    label = ((objects.node or {}).get("metadata") or {}).get("labels") or {}
    own_meta = (objects.own or {}).get("metadata") or {}
    if objects.own is not None and label.get("gpu-slots.io/plugin-daemonset") == own_meta.get(
        "name"
    ):
        return objects.own
    return objects.shared


# plan, preview, apply --------------------------------------------------------------------


def split_objects(ctx: ChangeContext, node: str, objects: SplitObjects) -> pipeline.ReadObjects:
    """The objects a split plan was made from, keyed for the freshness token."""
    ns, shared = ctx.settings.plugin_target.namespace, _shared_name(ctx)
    own = own_name(shared, node)
    return {
        f"node/{node}": objects.node,
        f"daemonset/{ns}/{shared}": objects.shared,
        f"configmap/{ns}/{ctx.settings.plugin_configmap_name}": objects.shared_configmap,
        f"daemonset/{ns}/{own}": objects.own,
        f"configmap/{ns}/{own}": objects.own_configmap,
    }


def _plan(
    ctx: ChangeContext,
    writer: SplitWriter,
    request: SplitRequest,
    *,
    rollback: bool,
    expected: str | None = None,
) -> tuple[SplitPlan, str]:
    """The split planned from the objects as the API server holds them now, and the token a
    preview of it hands out. `expected` (the preview's token) is checked against those objects
    before planning, so a bad or stale token is refused even when nothing would change."""
    state = node_state(ctx, request.node)
    refused = split_refusal(state, target=ctx.settings.plugin_target.ref)
    if refused is None and request.kubernetes_gpus is not None:
        refused = dra_held(state, request.kubernetes_gpus)
    if refused is not None:
        raise refused  # before any read: nothing of another install is planned
    objects = writer.read(request.node, own_name(_shared_name(ctx), request.node))
    if objects.node is None:
        raise PlanRefused(RefusalCode.NODE_NOT_FOUND, "node-not-in-cluster", node=request.node)
    read = split_objects(ctx, request.node, objects)
    pipeline.check_token(expected, read)
    shared_status = (objects.shared or {}).get("status") or {}
    plan = plan_split(
        request,
        node=objects.node,
        shared=objects.shared,
        shared_configmap=objects.shared_configmap,
        own=objects.own,
        own_configmap=objects.own_configmap,
        gpus=node_gpus(state),
        slots_before=state.allocatable,
        shared_nodes=int(shared_status.get("desiredNumberScheduled") or 0),
        rollback=rollback,
    )
    return plan, pipeline.token_of(read)


class SplitKind:
    """A node's split, its return to shared and their undo, as a ChangeKind of the pipeline."""

    def plan(
        self,
        ctx: ChangeContext,
        writer: PluginWriter,
        request: SplitRequest,
        *,
        rollback: bool,
        expected: str | None,
    ) -> tuple[SplitPlan, str]:
        return _plan(ctx, SplitWriter(writer), request, rollback=rollback, expected=expected)

    def preview(
        self, ctx: ChangeContext, writer: PluginWriter, plan: SplitPlan, token: str
    ) -> SplitPreview:
        ns = ctx.settings.plugin_target.namespace
        diffs = {
            w.key: label_diff(w.before, w.after or {}, title=f"node/{w.name}")
            if w.kind == "Node"
            else object_diff(w.before, w.after, title=f"{w.kind.lower()}/{ns}/{w.name}")
            for w in plan.writes
        }
        return SplitPreview(plan, diffs, SplitWriter(writer).dry_run(plan), token)

    def write(
        self,
        ctx: ChangeContext,
        writer: PluginWriter,
        admin: Admin,
        plan: SplitPlan,
        request: SplitRequest,
        *,
        rolls_back: str | None,
        pass_failing: bool | None,
    ) -> AppliedSplit:
        check_confirmed(plan, request)
        now = ctx.clock()
        change = change_id(now, secrets.token_hex(3))
        made = Authored(change, admin.user, now, rolls_back=rolls_back, forced=admin.forced)
        record = split_record(plan, made)
        applied = SplitWriter(writer).apply(plan, record=record)
        pipeline.await_read_back(ctx, applied.written)
        ctx.snapshots.poke()
        return AppliedSplit(plan, applied)

    def undo(self, record: ChangeRecord, *, confirm: bool) -> SplitRequest:
        return split_undo_request(record, confirm=confirm)


SPLIT = SplitKind()


def preview_split(
    ctx: ChangeContext, principal: Principal, request: SplitRequest, *, rollback: bool = False
) -> SplitPreview:
    """The plan with its diffs and the server's dry run; raises PlanRefused/ClusterError."""
    return pipeline.preview_change(ctx, principal, SPLIT, request, rollback=rollback)


def apply_split(
    ctx: ChangeContext, admin: Admin, request: SplitRequest, expected: str | None
) -> AppliedSplit:
    """Write the split planned from the objects as they are now; audit it as a change."""
    return pipeline.apply_change(ctx, admin, SPLIT, request, expected)


def change_split(
    ctx: ChangeContext, asked: Asked, change: SplitRequest
) -> SplitPreviewOut | SplitAppliedOut | NoChangeOut:
    """The JSON API's use case: preview or apply; no change is an answer, not an error."""

    def answer() -> SplitPreviewOut | SplitAppliedOut:
        if asked.dry_run:
            return preview_split(ctx, asked.admin.principal, change).out(asked.lang)
        return apply_split(ctx, asked.admin, change, asked.expected).out(asked.lang)

    return pipeline.or_no_change(answer, asked)
