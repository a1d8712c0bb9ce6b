"""The only code that writes the plugin's config: its DaemonSet and ConfigMap, and dry runs.

Writes carry the resourceVersions of the objects the plan was made from (read just
before, once the service checked the preview's freshness token), so someone else's write
in between is a 409 and nothing is written; a DaemonSet status write alone is retried
(app.kube.status_races). The ConfigMap is written before the DaemonSet
(the new pods must find their config); a ConfigMap deletion comes after it (the old pods
must not lose theirs). When the DaemonSet write fails, the ConfigMap write is undone.
After a timeout or a 5xx the objects are re-read first (app.kube.uncertain): a write that
was committed is never undone as if it had failed, and the admin is told the state found.
Each applied change is kept in the durable history and announced by an Event
(app.kube.events). Calls made here are all declared in app.kube.permissions.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client

from app.clock import utc_now
from app.domain.changes.history import ChangeRecord
from app.domain.changes.models import ChangePlan, ChangeWarning, ConfigMapAction
from app.domain.changes.outcome import Found, describe
from app.domain.changes.records import stamped
from app.domain.cluster import Manifest
from app.domain.plugin_target import PluginTarget
from app.errors import ClusterError, ConflictError
from app.kube.calls import NamespaceCalls, delete_options, raw
from app.kube.client import call_json, copy_api_client
from app.kube.concurrent import ConcurrentChange, concurrent_change, mode_with_change_id
from app.kube.events import AuditTrail
from app.kube.history import ChangeHistory
from app.kube.uncertain import ApplyFailed, NotWritten, Reader, Settle, audit_failure

__all__ = ["ApplyFailed", "ApplyResult", "ClusterObjects", "DryRunResult", "PluginWriter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterObjects:
    """The plugin DaemonSet and its ConfigMap as the API server holds them now."""

    daemonset: Manifest | None
    configmap: Manifest | None


@dataclass(frozen=True)
class DryRunResult:
    """The API server's verdict on each write (None: it would be accepted)."""

    configmap: str | None
    daemonset: str | None

    @property
    def ok(self) -> bool:
        return self.configmap is None and self.daemonset is None


@dataclass(frozen=True)
class ApplyResult:
    """What was written."""

    daemonset: Manifest
    configmap: Manifest | None
    applied_at: datetime
    warnings: tuple[ChangeWarning, ...] = ()
    change_id: str | None = None  # the entry in the change history (None: not recorded)


class PluginWriter:
    """Reads and writes the plugin's DaemonSet and ConfigMap; records changes as the dashboard.

    `history` keeps each change (None: Events only, as in tests of the writes alone).
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        plugin: PluginTarget,
        configmap_name: str,
        clock: Callable[[], datetime] = utc_now,
        audit_client: client.ApiClient | None = None,
        history: ChangeHistory | None = None,
    ) -> None:
        self.plugin = plugin
        self.configmap_name = configmap_name
        self.clock = clock
        self.trail = AuditTrail(audit_client or api_client, plugin=plugin, history=history)
        # reads made as the dashboard itself, whoever the writes impersonate (the split's
        # hand-over waits on the node's pods: app.kube.handover)
        self.own_calls = NamespaceCalls(audit_client or api_client, plugin.namespace)
        self._bind(api_client)

    def _bind(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self.calls = NamespaceCalls(api_client, self.plugin.namespace)

    @property
    def history(self) -> ChangeHistory | None:
        return self.trail.history

    @contextmanager
    def acting_as(self, user: str | None, groups: tuple[str, ...] = ()) -> Iterator[PluginWriter]:
        """This writer, or one that impersonates `user` (Events stay the dashboard's own)."""
        if not user:
            yield self
            return
        impersonating = copy_api_client(
            self.api_client, impersonate_user=user, impersonate_groups=groups
        )
        try:
            acting = copy.copy(self)
            acting._bind(impersonating)
            yield acting
        finally:
            impersonating.close()

    def read(self) -> ClusterObjects:
        """Both objects, fresh from the API server (None where absent)."""
        return ClusterObjects(self._read_daemonset(), self._read_configmap())

    def dry_run(self, plan: ChangePlan) -> DryRunResult:
        """Send each write with dryRun=All; collect the server's objections."""
        configmap_error: str | None = None
        try:
            self._write_configmap(plan, dry_run=True)
            if plan.configmap_action is ConfigMapAction.DELETE:
                self._delete_configmap(plan, dry_run=True)
        except ClusterError as exc:
            configmap_error = str(exc)
        daemonset_error: str | None = None
        try:
            self._write_daemonset(plan, dry_run=True)
        except ClusterError as exc:
            daemonset_error = str(exc)
        return DryRunResult(configmap=configmap_error, daemonset=daemonset_error)

    def apply(self, plan: ChangePlan, *, record: ChangeRecord) -> ApplyResult:
        """Write the plan: ConfigMap, DaemonSet, then a ConfigMap deletion; keep `record`.

        The service built `record` (app.domain.changes.records); it is stamped here with
        the moment of the writes and their warnings, then kept and announced.
        """
        warnings: list[ChangeWarning] = []
        plan = mode_with_change_id(plan, record.id)  # a concurrent loser can name this change
        settle = self._settle(plan)
        try:
            written_cm, written_ds = self._write_both(plan, settle, warnings)
        except (ApplyFailed, ConcurrentChange) as failed:
            audit_failure(plan, failed, user=record.user, daemonset=self.plugin.ref)
            raise
        result_cm = written_cm if written_cm is not None else plan.configmap_before
        if plan.configmap_action is ConfigMapAction.DELETE and self._deleted_after(
            plan, settle, warnings
        ):
            result_cm = None
        applied_at = self.clock()
        record = stamped(record, at=applied_at, warnings=warnings)
        recorded = self.trail.mode_change(plan, written_ds, record, warnings)
        return ApplyResult(
            written_ds, result_cm, applied_at, tuple(warnings), record.id if recorded else None
        )

    # the steps of a change -------------------------------------------------------------

    def _settle(self, plan: ChangePlan) -> Settle:
        return Settle(plan, self._read_configmap, self._read_daemonset, self.plugin)

    def _write_both(
        self, plan: ChangePlan, settle: Settle, warnings: list[ChangeWarning]
    ) -> tuple[Manifest | None, Manifest]:
        """The ConfigMap and the DaemonSet as written; the ConfigMap undone if the second fails."""
        try:
            written_cm = self._write_configmap(plan, dry_run=False)
        except ConflictError as exc:  # another change's write came first: nothing written
            raise self._lost("ConfigMap", self.configmap_name, self._read_configmap, exc) from exc
        except ClusterError as exc:
            written_cm = settle.configmap_write(exc, warnings)
        try:
            written_ds = self._write_daemonset(plan, dry_run=False)
        except ClusterError as exc:
            try:
                written_ds = settle.daemonset_write(exc, warnings)
            except NotWritten:
                failed = self._undo_configmap(plan, written_cm, exc)
                restored = not isinstance(failed, ApplyFailed) or failed.restored
                if isinstance(exc, ConflictError) and restored:
                    undone = 0 if written_cm is None else 1
                    raise self._lost(
                        "DaemonSet", self.plugin.name, self._read_daemonset, failed, undone=undone
                    ) from exc
                raise failed from exc
        return written_cm, written_ds

    def _lost(
        self, kind: str, name: str, read: Reader, failed: ClusterError, *, undone: int = 0
    ) -> ConcurrentChange:
        """The loser's answer (app.kube.concurrent), naming the change the object holds now."""
        where = f"{self.plugin.namespace}/{name}"
        return concurrent_change(kind, where, read, failed, undone=undone)

    def _deleted_after(
        self, plan: ChangePlan, settle: Settle, warnings: list[ChangeWarning]
    ) -> bool:
        """Delete the ConfigMap the DaemonSet no longer uses; whether it is gone."""
        try:
            self._delete_configmap(plan, dry_run=False)
            return True
        except ClusterError as exc:
            if settle.deleted(exc):
                warnings.append(ChangeWarning("answer-lost-deleted", {"error": str(exc)}))
                return True
            warnings.append(ChangeWarning("configmap-left-behind", {"error": str(exc)}))
            return False

    def replace_daemonset(self, body: Manifest, *, seen: Manifest, action: str) -> Manifest:
        """Replace the plugin DaemonSet with `body` (read as `seen`); a status race is retried."""
        result = self.calls.replace_daemonset(
            self.plugin.name,
            body,
            seen=seen,
            dry_run=False,
            action=f"{action} on {self.plugin.ref}",
        )
        assert result is not None
        return result

    # one object ------------------------------------------------------------------------

    def _read_configmap(self) -> Manifest | None:
        return self.calls.read_configmap(self.configmap_name)

    def _read_daemonset(self) -> Manifest | None:
        return self.calls.read_daemonset(self.plugin.name)

    def _write_configmap(self, plan: ChangePlan, *, dry_run: bool) -> Manifest | None:
        body: Any = plan.configmap  # plain JSON: the client sends dicts as they are
        if body is None:
            return None
        core, ns, kwargs = self.calls.core, self.plugin.namespace, raw(dry_run)
        name = f"ConfigMap {ns}/{self.configmap_name}"
        if plan.configmap_action is ConfigMapAction.CREATE:
            return call_json(
                lambda: core.create_namespaced_config_map(ns, body, **kwargs),
                action=f"creating {name}",
            )
        return call_json(
            lambda: core.replace_namespaced_config_map(self.configmap_name, ns, body, **kwargs),
            action=f"updating {name}",
        )

    def _write_daemonset(self, plan: ChangePlan, *, dry_run: bool) -> Manifest:
        result = self.calls.replace_daemonset(
            self.plugin.name,
            plan.daemonset,
            seen=plan.daemonset_before,
            dry_run=dry_run,
            action=f"updating DaemonSet {self.plugin.ref}",
        )
        assert result is not None
        return result

    def _delete_configmap(self, plan: ChangePlan, *, dry_run: bool) -> None:
        version = plan.resource_versions["configmap"]
        self._delete_configmap_at(
            version,
            dry_run=dry_run,
            action=f"deleting ConfigMap {self.plugin.namespace}/{self.configmap_name}",
        )

    def _delete_configmap_at(self, version: str | None, *, dry_run: bool, action: str) -> None:
        """Delete the ConfigMap if it still has resourceVersion `version`."""
        options = delete_options(client.V1Preconditions(resource_version=version), dry_run=dry_run)
        call_json(
            lambda: self.calls.core.delete_namespaced_config_map(
                self.configmap_name, self.plugin.namespace, body=options, **raw(dry_run)
            ),
            action=action,
        )

    def _restore_configmap(self, plan: ChangePlan, written: Manifest) -> None:
        """Undo the ConfigMap write `written`: delete what was created, else put back the old."""
        version = str((written.get("metadata") or {}).get("resourceVersion", ""))
        if plan.configmap_action is ConfigMapAction.CREATE:
            self._delete_configmap_at(
                version,
                dry_run=False,
                action="removing the ConfigMap created for the failed change",
            )
            return
        before: Any = dict(plan.configmap_before or {})
        before["metadata"] = {**before.get("metadata", {}), "resourceVersion": version}
        call_json(
            lambda: self.calls.core.replace_namespaced_config_map(
                self.configmap_name, self.plugin.namespace, before, **raw()
            ),
            action="restoring the ConfigMap after the failed change",
        )

    def _undo_configmap(
        self, plan: ChangePlan, written: Manifest | None, cause: ClusterError
    ) -> ClusterError:
        """Restore the ConfigMap after a failed DaemonSet write; the error to raise."""
        if written is None:
            return cause
        try:
            self._restore_configmap(plan, written)
        except ClusterError as undo_error:
            settled = self._settle(plan).undo(cause, undo_error)
            if settled is not None:
                return settled
            log.error(
                "plugin change half-applied: ConfigMap written, DaemonSet not, restore failed",
                extra={"cause": str(cause), "restore_error": str(undo_error)},
            )
            return ApplyFailed(
                f"{cause}. The ConfigMap was already written and restoring it failed "
                f"({undo_error}): the ConfigMap holds the NEW config, the DaemonSet the OLD one; "
                "the running plugin pods are unaffected until they restart. Retry the change or "
                "roll the ConfigMap back by hand.",
                cause=cause,
                restored=False,
                state=describe(configmap=Found.NEW, daemonset=Found.OLD),
            )
        log.warning("plugin change failed; ConfigMap restored", extra={"cause": str(cause)})
        return ApplyFailed(
            f"{cause}. The ConfigMap write was undone: the cluster is as before the change.",
            cause=cause,
            restored=True,
            state=describe(configmap=Found.OLD, daemonset=Found.OLD),
        )
