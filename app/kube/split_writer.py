"""Writes of a per-node GPU split: the node's own DaemonSet and ConfigMap, the node label.

Every write carries the resourceVersion the plan was made from (replace, delete
preconditions), so someone else's change in between is a 409. The writes are made in
the plan's order: config first, then the node's own DaemonSet (which matches no node
yet), the shared DaemonSet's exclusion term, and last the node label that hands the node
over. Calls made here are declared in app.kube.permissions.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client

from app.domain.changes.history import ChangeRecord, change_id, record_event
from app.domain.changes.split_models import ObjectWrite, SplitPlan
from app.domain.cluster import Manifest
from app.errors import ClusterError
from app.kube.split_undo import LostAnswer, SplitFailed, settle_failed, undo
from app.kube.status_races import replace_despite_status_writes
from app.kube.writer import COMPONENT, PluginWriter, _raw

__all__ = ["SplitApplied", "SplitFailed", "SplitObjects", "SplitWriter"]

SPLIT_REASONS = {"split": "GpuSlotsSplitChanged", "rollback": "GpuSlotsSplitRolledBack"}


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
    warnings: tuple[str, ...]


class SplitWriter:
    """Reads and writes a node's split, acting as the given PluginWriter's identity."""

    def __init__(self, writer: PluginWriter) -> None:
        self._writer = writer
        api = writer._api_client
        self._apps = client.AppsV1Api(api)
        self._core = client.CoreV1Api(api)
        self.namespace = writer.plugin.namespace

    def read(self, node: str, own_name: str) -> SplitObjects:
        w = self._writer
        objects = w.read()
        ns = self.namespace
        return SplitObjects(
            node=w._optional(
                lambda: self._core.read_node(node, **_raw()), action=f"reading node {node}"
            ),
            shared=objects.daemonset,
            shared_configmap=objects.configmap,
            own=w._optional(
                lambda: self._apps.read_namespaced_daemon_set(own_name, ns, **_raw()),
                action=f"reading DaemonSet {ns}/{own_name}",
            ),
            own_configmap=w._optional(
                lambda: self._core.read_namespaced_config_map(own_name, ns, **_raw()),
                action=f"reading ConfigMap {ns}/{own_name}",
            ),
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

    def apply(self, plan: SplitPlan, *, user: str, rolls_back: str | None = None) -> SplitApplied:
        """Make the writes in order; on a failure undo those made (app.kube.split_undo)."""
        done: list[ObjectWrite] = []
        warnings: list[str] = []
        for write in plan.writes:
            try:
                self._write(write, dry_run=False)
            except ClusterError as exc:
                try:
                    failed = settle_failed(write, exc, self._read_object, warnings)
                except LostAnswer:
                    done.append(write)
                    continue
                raise undo(
                    plan,
                    done,
                    exc,
                    failed,
                    read=self._read_object,
                    write=lambda w: self._write(w, dry_run=False),
                    where=self.namespace,
                    user=user,
                ) from exc
            done.append(write)
        at = self._writer._clock()
        record = ChangeRecord(
            id=change_id(at, secrets.token_hex(3)),
            kind="split",
            action="rollback" if plan.kind == "rollback" else "change",
            at=at,
            user=user,
            summary=plan.describe(),
            before=plan.before.as_json(),
            after=plan.after.as_json(),
            node=plan.node,
            rolls_back=rolls_back,
            warnings=tuple(warnings),
        )
        # About a DaemonSet of the plugin namespace, not the Node: the API server refuses an
        # Event in that namespace about a cluster-scoped object (only default/kube-system).
        involved = next((w for w in plan.writes if w.kind == "DaemonSet"), None)
        target = (involved.before or involved.after if involved else None) or {
            "metadata": {"name": plan.before.daemonset, "namespace": self.namespace}
        }
        event = record_event(
            record,
            namespace=self.namespace,
            involved={"apiVersion": "apps/v1", "kind": "DaemonSet", **target},
            reason=SPLIT_REASONS[plan.kind],
            component=COMPONENT,
        )
        recorded = self._writer.record_change(record, event, warnings)
        return SplitApplied(record.id if recorded else None, at, tuple(warnings))

    # one object ------------------------------------------------------------------------

    def _read_object(self, write: ObjectWrite) -> Manifest | None:
        """The object `write` is about, fresh from the API server (None: absent)."""
        ns, name = self.namespace, write.name
        if write.kind == "Node":
            return self._writer._optional(
                lambda: self._core.read_node(name, **_raw()), action=f"reading node {name}"
            )
        if write.kind == "DaemonSet":
            return self._writer._optional(
                lambda: self._apps.read_namespaced_daemon_set(name, ns, **_raw()),
                action=f"reading DaemonSet {ns}/{name}",
            )
        return self._writer._optional(
            lambda: self._core.read_namespaced_config_map(name, ns, **_raw()),
            action=f"reading ConfigMap {ns}/{name}",
        )

    def _replace_daemonset(self, write: ObjectWrite, kwargs: dict[str, Any]) -> None:
        def replace(body: Any) -> Manifest | None:
            return self._writer._call(
                lambda: self._apps.replace_namespaced_daemon_set(
                    write.name, self.namespace, body, **kwargs
                ),
                action=f"{write.action} {write.kind} {write.name}",
            )

        def read() -> Manifest | None:
            return self._read_object(write)

        assert write.after is not None and write.before is not None
        replace_despite_status_writes(replace, read, write.after, seen=write.before)

    def _write(self, write: ObjectWrite, *, dry_run: bool) -> None:
        ns = self.namespace
        kwargs = _raw(dry_run)
        body: Any = write.after
        action = f"{write.action} {write.kind} {write.name}"
        call: Callable[[], Any]
        if write.kind == "Node":
            call = lambda: self._core.patch_node(  # noqa: E731
                write.name,
                {"metadata": body},
                _content_type="application/merge-patch+json",
                **kwargs,
            )
        elif write.action == "delete":
            # uid, not resourceVersion: the controller rewrites a DaemonSet's status all the
            # time (the label write just before makes it do so), the object stays the one seen.
            uid = ((write.before or {}).get("metadata") or {}).get("uid")
            options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
            delete = (
                self._apps.delete_namespaced_daemon_set
                if write.kind == "DaemonSet"
                else self._core.delete_namespaced_config_map
            )
            call = lambda: delete(write.name, ns, body=options, **kwargs)  # noqa: E731
        elif write.kind == "DaemonSet":
            if write.action == "create":
                call = lambda: self._apps.create_namespaced_daemon_set(  # noqa: E731
                    ns, body, **kwargs
                )
            else:
                self._replace_daemonset(write, kwargs)
                return
        elif write.action == "create":
            call = lambda: self._core.create_namespaced_config_map(ns, body, **kwargs)  # noqa: E731
        else:
            call = lambda: self._core.replace_namespaced_config_map(  # noqa: E731
                write.name, ns, body, **kwargs
            )
        self._writer._call(call, action=action)
