"""Writes of a per-node GPU split: the node's own DaemonSet and ConfigMap, the node label.

Every write carries the resourceVersion the plan was made from (replace, delete
preconditions), so someone else's change in between is a 409. The writes are made in
the plan's order: config first, then the node's own DaemonSet (which matches no node
yet), the shared DaemonSet's exclusion term, and last the node label that hands the node
over: vacated first, set once the old plugin pod has left the node (app.kube.handover).
Calls made here are declared in app.kube.permissions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client

from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import ChangeWarning
from app.domain.changes.records import stamped
from app.domain.changes.split_models import NODE_LABEL, ObjectWrite, SplitPlan
from app.domain.cluster import Manifest
from app.errors import ClusterError, ConflictError
from app.kube.calls import delete_options, raw
from app.kube.client import call_json
from app.kube.concurrent import ConcurrentChange, concurrent_change, with_change_id
from app.kube.events import FORCED, daemonset_event
from app.kube.handover import HANDOVER_WAIT_S, VACANT, HandOver, handed_over
from app.kube.split_undo import LostAnswer, SplitFailed, settle_failed, undo
from app.kube.writer import PluginWriter

__all__ = ["SplitApplied", "SplitFailed", "SplitObjects", "SplitWriter"]

SPLIT_REASONS = {"split": "GpuSlotsSplitChanged", "rollback": "GpuSlotsSplitRolledBack"}
audit_log = logging.getLogger("gpu_slots.audit")


def _audit(plan: SplitPlan, record: ChangeRecord) -> None:
    """One audit line per applied split, return or undo (docs/ADMIN.md; issue 33)."""
    verb = "rolled back a GPU split of" if plan.kind == "rollback" else "changed the GPU split of"
    forced = f" ({FORCED})" if record.forced else ""
    audit_log.info(
        f"{record.user} {verb} node {plan.node}: {record.summary}{forced}",
        extra={
            "user": record.user,
            "kind": plan.kind,
            "change_id": record.id,
            "forced": record.forced,
            "node": plan.node,
            "before": record.before.as_json(),
            "after": record.after.as_json(),
            "rolls_back": record.rolls_back,
            "outcome": "applied",
        },
    )


@dataclass(frozen=True)
class SplitObjects:
    """What a split plan is made from, fresh from the API server."""

    node: Manifest | None
    shared: Manifest | None
    shared_configmap: Manifest | None
    own: Manifest | None
    own_configmap: Manifest | None


@dataclass(frozen=True)
class SplitApplied:
    change_id: str | None
    applied_at: datetime
    warnings: tuple[ChangeWarning, ...]
    written: tuple[Manifest, ...] = ()  # the objects as the API server answered each write


class SplitWriter:
    """Reads and writes a node's split, acting as the given PluginWriter's identity."""

    def __init__(self, writer: PluginWriter, *, handover_wait_s: float = HANDOVER_WAIT_S) -> None:
        self._writer = writer
        self._calls = writer.calls
        self.namespace = writer.plugin.namespace
        self._handover = HandOver(writer.own_calls, wait_s=handover_wait_s)

    def read(self, node: str, own_name: str) -> SplitObjects:
        objects = self._writer.read()
        return SplitObjects(
            node=self._calls.read_node(node),
            shared=objects.daemonset,
            shared_configmap=objects.configmap,
            own=self._calls.read_daemonset(own_name),
            own_configmap=self._calls.read_configmap(own_name),
        )

    def dry_run(self, plan: SplitPlan) -> dict[str, str | None]:
        """The API server's verdict on each write (None: it would be accepted)."""
        verdicts: dict[str, str | None] = {}
        for write in plan.writes:
            try:
                self._write(write, dry_run=True)
                verdicts[write.key] = None
            except ClusterError as exc:
                verdicts[write.key] = str(exc)
        return verdicts

    def apply(self, plan: SplitPlan, *, record: ChangeRecord) -> SplitApplied:
        """Make the writes in order (on a failure undo those made); keep `record`."""
        warnings: list[ChangeWarning] = []
        plan = with_change_id(plan, record.id)  # a concurrent loser can name this change
        written = self._write_all(plan, user=record.user, warnings=warnings)
        at = self._writer.clock()
        record = stamped(record, at=at, warnings=warnings)
        # About a DaemonSet of the plugin namespace, not the Node: the API server refuses an
        # Event in that namespace about a cluster-scoped object (only default/kube-system).
        involved = next((w for w in plan.writes if w.kind == "DaemonSet"), None)
        target = (involved.before or involved.after if involved else None) or {
            "metadata": {"name": plan.before.daemonset, "namespace": self.namespace}
        }
        event = daemonset_event(
            record, target, namespace=self.namespace, reason=SPLIT_REASONS[plan.kind]
        )
        recorded = self._writer.trail.record_change(record, event, warnings)
        _audit(plan, record)
        return SplitApplied(record.id if recorded else None, at, tuple(warnings), written)

    def _write_all(
        self, plan: SplitPlan, *, user: str, warnings: list[ChangeWarning]
    ) -> tuple[Manifest, ...]:
        """Make the writes in order, keeping the answers; SplitFailed after undoing those made."""
        done: list[ObjectWrite] = []
        written: list[Manifest] = []
        for write in plan.writes:
            try:
                answer = self._write(write, dry_run=False, warnings=warnings)
            except ClusterError as exc:
                try:
                    failed = settle_failed(write, exc, self._read_object, warnings)
                except LostAnswer:
                    done.append(write)
                    continue
                undone = undo(
                    plan,
                    done,
                    exc,
                    failed,
                    read=self._read_object,
                    write=lambda w: self._write(w, dry_run=False),
                    where=self.namespace,
                    user=user,
                )
                if isinstance(exc, ConflictError) and undone.restored:  # issue 33: 409, winner
                    raise self._lost(write, undone, undone=len(done)) from exc
                raise undone from exc
            done.append(write)
            if answer is not None and write.action != "delete":
                written.append(answer)
        return tuple(written)

    def _lost(self, write: ObjectWrite, failed: SplitFailed, *, undone: int) -> ConcurrentChange:
        """The loser's answer (app.kube.concurrent), naming the change the object holds now."""
        name = write.name if write.kind == "Node" else f"{self.namespace}/{write.name}"
        read = functools.partial(self._read_object, write)
        return concurrent_change(write.kind, name, read, failed, undone=undone)

    # one object ------------------------------------------------------------------------

    def _read_object(self, write: ObjectWrite) -> Manifest | None:
        """The object `write` is about, fresh from the API server (None: absent)."""
        if write.kind == "Node":
            return self._calls.read_node(write.name)
        if write.kind == "DaemonSet":
            return self._calls.read_daemonset(write.name)
        return self._calls.read_configmap(write.name)

    def _write(
        self,
        write: ObjectWrite,
        *,
        dry_run: bool,
        warnings: list[ChangeWarning] | None = None,
    ) -> Manifest | None:
        """Make `write`; the object as the API server answered (None: no body)."""
        moved = handed_over(write)
        if moved is not None and not dry_run:
            return self._hand_over(write, *moved, warnings=[] if warnings is None else warnings)
        action = f"{write.action} {write.kind} {write.name}"
        if write.kind == "DaemonSet" and write.action not in ("create", "delete"):
            assert write.after is not None and write.before is not None
            return self._calls.replace_daemonset(
                write.name, write.after, seen=write.before, dry_run=dry_run, action=action
            )
        return call_json(self._call(write, raw(dry_run)), action=action)

    def _hand_over(
        self, write: ObjectWrite, old: str | None, new: str | None, *, warnings: list[ChangeWarning]
    ) -> Manifest | None:
        """The node label write `write` in two: vacated, the old plugin pod gone, then set."""
        vacated = None
        if old != VACANT:
            vacated = self._label(write, {NODE_LABEL: VACANT}, "vacating", warnings)
        lingered = self._handover.wait_gone(
            write.name, frozenset(n for n in (old, new, self._writer.plugin.name) if n)
        )
        if lingered is not None:  # a kubelet that does not answer: let the new pod in anyway
            params = {"node": write.name, "seconds": f"{self._handover.wait_s:g}"}
            warnings.append(
                ChangeWarning("handover-unconfirmed", {**params, "pods": lingered.detail})
            )
        if new == VACANT:
            return vacated
        labels = (write.after or {}).get("labels") or {}
        try:
            return self._label(write, labels, "setting", warnings)
        except ClusterError:
            # as it was: the old DaemonSet's pod comes back; the error says what failed
            with contextlib.suppress(ClusterError):
                self._label(write, {NODE_LABEL: old}, "restoring", [])
            raise

    def _label(
        self, write: ObjectWrite, labels: Manifest, verb: str, warnings: list[ChangeWarning]
    ) -> Manifest | None:
        """Patch the node's labels (None: remove); the Node as answered, or as re-read when
        the answer was lost but the patch made (app.kube.split_undo.settle_failed)."""
        step = dataclasses.replace(write, after={"labels": labels})
        try:
            return call_json(self._call(step, raw()), action=f"{verb} label of Node {write.name}")
        except ClusterError as exc:
            try:
                settle_failed(step, exc, self._read_object, warnings)
            except LostAnswer:
                return self._read_object(step)
            raise

    def _call(self, write: ObjectWrite, kwargs: dict[str, Any]) -> Callable[[], Any]:
        """The client call that makes `write` (all but the DaemonSet replace)."""
        ns, apps, core = self.namespace, self._calls.apps, self._calls.core
        body: Any = write.after
        if write.kind == "Node":
            return lambda: core.patch_node(
                write.name,
                {"metadata": body},
                _content_type="application/merge-patch+json",
                **kwargs,
            )
        if write.action == "delete":
            # uid, not resourceVersion: the controller rewrites a DaemonSet's status all the
            # time (the label write just before makes it do so), the object stays the one seen.
            uid = ((write.before or {}).get("metadata") or {}).get("uid")
            options = delete_options(
                client.V1Preconditions(uid=uid), dry_run=kwargs.get("dry_run") == "All"
            )
            delete = (
                apps.delete_namespaced_daemon_set
                if write.kind == "DaemonSet"
                else core.delete_namespaced_config_map
            )
            return lambda: delete(write.name, ns, body=options, **kwargs)
        if write.kind == "DaemonSet":
            return lambda: apps.create_namespaced_daemon_set(ns, body, **kwargs)
        if write.action == "create":
            return lambda: core.create_namespaced_config_map(ns, body, **kwargs)
        return lambda: core.replace_namespaced_config_map(write.name, ns, body, **kwargs)
