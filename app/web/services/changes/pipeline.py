"""The steps every admin change shares, written once: writer, freshness, no-change, record facts.

Every change (mode switch, per-node split, return to shared, rollback of either) runs
plan -> preview (+ freshness token) -> apply (token checked) -> record -> rollout. Each kind
of change implements one interface, `ChangeKind` (app.web.services.changes.plugin_admin for the
mode, gpu_split for the split); the pipeline that calls it is here, so the stale check, the
writer's identity, the order of the steps and the "nothing to change" answer exist once.
docs/ADMIN.md ("The change pipeline") and docs/decisions/0104 describe it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from app.domain.changes.freshness import check_fresh, freshness_token
from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import PlanRefused, RefusalCode
from app.domain.cluster import Manifest
from app.errors import WritesDisabledError
from app.i18n.translate import DEFAULT_LANGUAGE
from app.kube.writer import PluginWriter
from app.settings import Settings
from app.web.auth.principal import Admin, Principal
from app.web.services.snapshots.builder import ClusterSource
from app.web.services.snapshots.service import SnapshotService
from app.web.views.admin_schemas import ModeAppliedOut, ModePreviewOut, NoChangeOut
from app.web.views.refusal_text import refusal_text
from app.web.views.split_schemas import SplitAppliedOut, SplitPreviewOut

T = TypeVar("T")
ReadObjects = Mapping[str, Manifest | None]
RequestT = TypeVar("RequestT")
PlanT = TypeVar("PlanT")
PreviewT = TypeVar("PreviewT", bound="ChangePreview")
AppliedT = TypeVar("AppliedT", bound="ChangeApplied")
PreviewT_co = TypeVar("PreviewT_co", bound="ChangePreview", covariant=True)
AppliedT_co = TypeVar("AppliedT_co", bound="ChangeApplied", covariant=True)


@dataclass(frozen=True)
class ChangeContext:
    """What the admin change services read and write through, and nothing else of the app.

    Built by the app factory; the services never see the Runtime (auth, templates, reports).
    """

    settings: Settings
    source: ClusterSource  # the watch cache: plans read the objects it holds
    snapshots: SnapshotService
    clock: Callable[[], datetime]
    writer: PluginWriter | None  # None: plugin changes are not enabled


@dataclass(frozen=True)
class Asked:
    """How a change was asked for (a JSON write's `Write.asked`, or a form's apply): by whom,
    for its preview or its write (`dry_run`), with the preview's token it must still match
    (`expected`; None: none), and the language its answer is worded in."""

    admin: Admin
    dry_run: bool
    expected: str | None
    lang: str = DEFAULT_LANGUAGE


def get_writer(ctx: ChangeContext) -> PluginWriter:
    writer = ctx.writer
    if writer is None:
        raise WritesDisabledError("Plugin changes are not enabled in this server.")
    return writer


@contextmanager
def writer_for(ctx: ChangeContext, principal: Principal) -> Iterator[PluginWriter]:
    """The writer acting as the principal (impersonation for proxy users)."""
    writer = get_writer(ctx)
    user = principal.user if principal.impersonate else None
    with writer.acting_as(user, principal.groups) as acting:
        yield acting


def cached_objects(ctx: ChangeContext) -> tuple[Manifest | None, Manifest | None]:
    """The shared DaemonSet and its ConfigMap as the watch cache holds them (no API call)."""
    target = ctx.settings.plugin_target
    daemonset = next((ds for ds in ctx.source.items("daemonsets") if target.matches(ds)), None)
    configmap = next(
        (
            cm
            for cm in ctx.source.items("configmaps")
            if (cm.get("metadata") or {}).get("name") == ctx.settings.plugin_configmap_name
            and (cm.get("metadata") or {}).get("namespace") in (None, target.namespace)
        ),
        None,
    )
    return daemonset, configmap


# the watch cache's collection of each kind a change writes
_COLLECTIONS = {"DaemonSet": "daemonsets", "ConfigMap": "configmaps", "Node": "nodes"}


def await_read_back(
    ctx: ChangeContext, written: Iterable[Manifest | None], wait_s: float = 2.0
) -> None:
    """Read your writes: wait, a bounded while, until the watch cache holds the objects a change
    just wrote (as the API server answered each write), so the next read (the config view, the
    plan of the next change, the editor) sees them. Every change's write step calls it.

    Past `wait_s` (a cache that lags or another writer that moved on) reads go on as before.
    An object written twice is waited for in its last version only.
    """
    last: dict[tuple[str, tuple[str, str]], str] = {}
    for obj in written:
        collection = _COLLECTIONS.get(str((obj or {}).get("kind")))
        if obj is not None and collection is not None and _version(obj):
            last[(collection, _identity(obj))] = _version(obj)
    wanted = set(last.items())
    deadline = time.monotonic() + wait_s
    while wanted and time.monotonic() < deadline:
        held = {c: {(_identity(o), _version(o)) for o in ctx.source.items(c)} for c, _ in last}
        wanted = {((c, ident), v) for (c, ident), v in wanted if (ident, v) not in held[c]}
        if wanted:
            time.sleep(0.02)


def _identity(obj: Manifest) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: Manifest) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def token_of(objects: ReadObjects) -> str:
    """The freshness token a preview hands out for the objects its plan read."""
    return freshness_token(objects)


def check_token(expected: str | None, objects: ReadObjects) -> None:
    """The one stale check of every change: PlanRefused(STALE) naming what moved.

    None: no token, nothing to compare (a preview; or a blind apply, which the JSON API
    allows only when the request asks for it with `?force=true`, app.web.deps.Write).
    """
    if expected is not None:
        check_fresh(expected, objects)


def or_no_change(answer: Callable[[], T], asked: Asked) -> T | NoChangeOut:
    """`answer()`, or NoChangeOut (in the asked language) when the planner finds nothing to
    change."""
    try:
        return answer()
    except PlanRefused as refused:
        if refused.code is RefusalCode.NO_CHANGE:
            return NoChangeOut(dryRun=asked.dry_run, detail=refusal_text(refused, asked.lang))
        raise


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# one kind of change, and the pipeline that runs every kind -------------------------------


class ChangePreview(Protocol):
    """What a change's preview hands out: its token, and its answer for the API."""

    @property
    def token(self) -> str: ...

    def out(self, lang: str = DEFAULT_LANGUAGE) -> ModePreviewOut | SplitPreviewOut: ...


class ChangeApplied(Protocol):
    """What an applied change hands back: its entry in the history, and its answer."""

    @property
    def change_id(self) -> str | None: ...

    def out(self, lang: str = DEFAULT_LANGUAGE) -> ModeAppliedOut | SplitAppliedOut: ...


class ChangeKind(Protocol[RequestT, PlanT, PreviewT_co, AppliedT_co]):
    """One kind of change (the plugin's mode, a node's split), as the pipeline calls it.

    The pure planning lives in app.domain.changes, the writes in app.kube; a kind only
    joins them: which objects it reads, what it shows, how it writes and records.
    """

    def plan(
        self,
        ctx: ChangeContext,
        writer: PluginWriter,
        request: RequestT,
        *,
        rollback: bool,
        expected: str | None,
    ) -> tuple[PlanT, str]:
        """The plan from the objects as the API server holds them now, and their freshness
        token; `expected` (a preview's token) is checked against them before planning."""
        ...

    def preview(
        self, ctx: ChangeContext, writer: PluginWriter, plan: PlanT, token: str
    ) -> PreviewT_co:
        """The plan shown: its diffs, the API server's dry run, slots before and after."""
        ...

    def write(
        self,
        ctx: ChangeContext,
        writer: PluginWriter,
        admin: Admin,
        plan: PlanT,
        request: RequestT,
        *,
        rolls_back: str | None,
        pass_failing: bool | None,
    ) -> AppliedT_co:
        """Write the plan, keep its record (naming the change it undoes), read it back."""
        ...

    def undo(self, record: ChangeRecord, *, confirm: bool) -> RequestT:
        """The request that puts back a record's typed `before` (confirm: host processes)."""
        ...


def preview_change(
    ctx: ChangeContext,
    principal: Principal,
    kind: ChangeKind[RequestT, PlanT, PreviewT, AppliedT],
    request: RequestT,
    *,
    rollback: bool = False,
    expected: str | None = None,
) -> PreviewT:
    """The preview of `request` (nothing written; a token given is checked as at apply);
    raises PlanRefused/ClusterError."""
    with writer_for(ctx, principal) as writer:
        plan, token = kind.plan(ctx, writer, request, rollback=rollback, expected=expected)
        return kind.preview(ctx, writer, plan, token)


def apply_change(
    ctx: ChangeContext,
    admin: Admin,
    kind: ChangeKind[RequestT, PlanT, PreviewT, AppliedT],
    request: RequestT,
    expected: str | None,
    *,
    rollback: bool = False,
    rolls_back: str | None = None,
    pass_failing: bool | None = False,
) -> AppliedT:
    """Write `request` planned from the objects as they are now (the preview's token checked)."""
    with writer_for(ctx, admin.principal) as writer:
        plan, _ = kind.plan(ctx, writer, request, rollback=rollback, expected=expected)
        return kind.write(
            ctx, writer, admin, plan, request, rolls_back=rolls_back, pass_failing=pass_failing
        )
