"""The only code that writes the plugin's config: its changes, their records and Events.

Writes carry the resourceVersions the plan was made from, so someone else's change in
between is a 409 and nothing is written. The ConfigMap is written before the DaemonSet
(the new pods must find their config); a ConfigMap deletion comes after it (the old pods
must not lose theirs). When the DaemonSet write fails, the ConfigMap write is undone.
After a timeout or a 5xx the objects are re-read first (app.kube.uncertain): a write that
was committed is never undone as if it had failed, and the admin is told the state found.
Each applied change is kept in the durable history (app.kube.history) and announced by an
Event. Calls made here are all declared in app.kube.permissions.
"""

from __future__ import annotations

import logging
import secrets
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from app.domain.changes.history import ChangeRecord, change_id, record_event
from app.domain.changes.models import ChangePlan, ConfigMapAction
from app.domain.changes.outcome import Found, describe

__all__ = ["ApplyFailed", "ApplyResult", "ClusterObjects", "DryRunResult", "PluginWriter"]
from app.domain.cluster import Manifest
from app.domain.plugin.target import PluginTarget
from app.errors import ClusterError, ConflictError, NotFoundError
from app.kube.client import call_json, copy_api_client, translate
from app.kube.history import ChangeHistory
from app.kube.status_races import replace_despite_status_writes
from app.kube.uncertain import ApplyFailed, NotWritten, Settle, audit_failure

log = logging.getLogger(__name__)
audit_log = logging.getLogger("gpu_slots.audit")

TIMEOUT_S = 15
EVENT_REASONS = {"change": "GpuSlotsConfigChanged", "rollback": "GpuSlotsConfigRolledBack"}
COMPONENT = "gpu-slots"


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
    warnings: tuple[str, ...] = ()
    change_id: str | None = None  # the entry in the change history (None: not recorded)


def utc_now() -> datetime:
    return datetime.now(UTC)


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
        self._api_client = api_client
        self._apps = client.AppsV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._events = client.CoreV1Api(audit_client or api_client)
        self.plugin = plugin
        self.configmap_name = configmap_name
        self._clock = clock
        self._audit_client = audit_client or api_client
        self.history = history

    @contextmanager
    def acting_as(self, user: str | None, groups: tuple[str, ...] = ()) -> Iterator[PluginWriter]:
        """This writer, or one that impersonates `user` (Events stay the dashboard's own)."""
        if not user:
            yield self
            return
        impersonating = copy_api_client(
            self._api_client, impersonate_user=user, impersonate_groups=groups
        )
        try:
            yield PluginWriter(
                impersonating,
                plugin=self.plugin,
                configmap_name=self.configmap_name,
                clock=self._clock,
                audit_client=self._audit_client,
                history=self.history,
            )
        finally:
            impersonating.close()

    # reads -------------------------------------------------------------------------------

    def read(self) -> ClusterObjects:
        """Both objects, fresh from the API server (None where absent)."""
        return ClusterObjects(self._read_daemonset(), self._read_configmap())

    # writes ------------------------------------------------------------------------------

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

    def apply(self, plan: ChangePlan, *, user: str, rolls_back: str | None = None) -> ApplyResult:
        """Write the plan: ConfigMap, DaemonSet, then a ConfigMap deletion; audit it."""
        warnings: list[str] = []
        settle = Settle(plan, self._read_configmap, self._read_daemonset, self._where())
        try:
            try:
                written_cm = self._write_configmap(plan, dry_run=False)
            except ClusterError as exc:
                written_cm = settle.configmap_write(exc, warnings)
            try:
                written_ds = self._write_daemonset(plan, dry_run=False)
            except ClusterError as exc:
                try:
                    written_ds = settle.daemonset_write(exc, warnings)
                except NotWritten:
                    raise self._undo_configmap(plan, written_cm, exc) from exc
        except ApplyFailed as failed:
            audit_failure(plan, failed, user=user, daemonset=self._where())
            raise
        result_cm = written_cm if written_cm is not None else plan.configmap_before
        if plan.configmap_action is ConfigMapAction.DELETE:
            try:
                self._delete_configmap(plan, dry_run=False)
                result_cm = None
            except ClusterError as exc:
                if settle.deleted(exc):
                    result_cm = None
                    warnings.append(
                        f"The answer to the ConfigMap deletion was lost ({exc}); re-reading "
                        "shows it was deleted."
                    )
                else:
                    warnings.append(
                        f"The DaemonSet is updated, but the ConfigMap could not be deleted "
                        f"({exc}); it is left behind, unused."
                    )
        applied_at = self._clock()
        record = ChangeRecord(
            id=change_id(applied_at, secrets.token_hex(3)),
            kind="mode",
            action=plan.kind,
            at=applied_at,
            user=user,
            summary=f"{plan.before.describe()} -> {plan.after.describe()}",
            before=plan.before.as_json(),
            after=plan.after.as_json(),
            rolls_back=rolls_back,
            warnings=tuple(warnings),
        )
        recorded = self._audit(plan, written_ds, record, warnings=warnings)
        return ApplyResult(
            written_ds, result_cm, applied_at, tuple(warnings), record.id if recorded else None
        )

    def _where(self) -> str:
        return self.plugin.ref

    def _read_configmap(self) -> Manifest | None:
        return self._optional(
            lambda: self._core.read_namespaced_config_map(
                self.configmap_name, self.plugin.namespace, **_raw()
            ),
            action=f"reading ConfigMap {self.plugin.namespace}/{self.configmap_name}",
        )

    def _read_daemonset(self) -> Manifest | None:
        return self._optional(
            lambda: self._apps.read_namespaced_daemon_set(
                self.plugin.name, self.plugin.namespace, **_raw()
            ),
            action=f"reading DaemonSet {self.plugin.ref}",
        )

    def _write_configmap(self, plan: ChangePlan, *, dry_run: bool) -> Manifest | None:
        body: Any = plan.configmap  # plain JSON: the client sends dicts as they are
        if body is None:
            return None
        kwargs = _raw(dry_run)
        name = f"ConfigMap {self.plugin.namespace}/{self.configmap_name}"
        if plan.configmap_action is ConfigMapAction.CREATE:
            return self._call(
                lambda: self._core.create_namespaced_config_map(
                    self.plugin.namespace, body, **kwargs
                ),
                action=f"creating {name}",
            )
        return self._call(
            lambda: self._core.replace_namespaced_config_map(
                self.configmap_name, self.plugin.namespace, body, **kwargs
            ),
            action=f"updating {name}",
        )

    def _write_daemonset(self, plan: ChangePlan, *, dry_run: bool) -> Manifest:
        def replace(body: Any) -> Manifest | None:
            return self._call(
                lambda: self._apps.replace_namespaced_daemon_set(
                    self.plugin.name, self.plugin.namespace, body, **_raw(dry_run)
                ),
                action=f"updating DaemonSet {self.plugin.ref}",
            )

        result = replace_despite_status_writes(
            replace, self._read_daemonset, plan.daemonset, seen=plan.daemonset_before
        )
        assert result is not None
        return result

    def _delete_configmap(self, plan: ChangePlan, *, dry_run: bool) -> None:
        version = plan.resource_versions["configmap"]
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=version)
        )
        self._call(
            lambda: self._core.delete_namespaced_config_map(
                self.configmap_name, self.plugin.namespace, body=options, **_raw(dry_run)
            ),
            action=f"deleting ConfigMap {self.plugin.namespace}/{self.configmap_name}",
        )

    def _undo_configmap(
        self, plan: ChangePlan, written: Manifest | None, cause: ClusterError
    ) -> ClusterError:
        """Restore the ConfigMap after a failed DaemonSet write; the error to raise."""
        if written is None:
            return cause
        version = str((written.get("metadata") or {}).get("resourceVersion", ""))
        try:
            if plan.configmap_action is ConfigMapAction.CREATE:
                options = client.V1DeleteOptions(
                    preconditions=client.V1Preconditions(resource_version=version)
                )
                self._call(
                    lambda: self._core.delete_namespaced_config_map(
                        self.configmap_name, self.plugin.namespace, body=options, **_raw()
                    ),
                    action="removing the ConfigMap created for the failed change",
                )
            else:
                before: Any = dict(plan.configmap_before or {})
                before["metadata"] = {**before.get("metadata", {}), "resourceVersion": version}
                self._call(
                    lambda: self._core.replace_namespaced_config_map(
                        self.configmap_name, self.plugin.namespace, before, **_raw()
                    ),
                    action="restoring the ConfigMap after the failed change",
                )
        except ClusterError as undo_error:
            settle = Settle(plan, self._read_configmap, self._read_daemonset, self._where())
            settled = settle.undo(cause, undo_error)
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

    # audit -------------------------------------------------------------------------------

    def _audit(
        self,
        plan: ChangePlan,
        daemonset: Manifest,
        record: ChangeRecord,
        *,
        warnings: list[str],
    ) -> bool:
        """Log the change, keep it in the history, announce it; False: not in the history."""
        verb = "rolled back" if plan.kind == "rollback" else "changed"
        message = (
            f"{record.user} {verb} the device plugin config: {plan.before.describe()} -> "
            f"{plan.after.describe()} (ConfigMap {plan.configmap_action.value})"
        )
        audit_log.info(
            message,
            extra={
                "user": record.user,
                "kind": plan.kind,
                "change_id": record.id,
                "before": plan.before.as_json(),
                "after": plan.after.as_json(),
                "configmap_action": plan.configmap_action.value,
                "daemonset": self.plugin.ref,
            },
        )
        event = record_event(
            record,
            namespace=self.plugin.namespace,
            involved={"apiVersion": "apps/v1", "kind": "DaemonSet", **daemonset},
            reason=EVENT_REASONS[plan.kind],
            component=COMPONENT,
        )
        event["message"] = message[:1024]
        event["reportingInstance"] = socket.gethostname()[:128]
        return self.record_change(record, event, warnings)

    def record_change(self, record: ChangeRecord, event: Manifest, warnings: list[str]) -> bool:
        """Keep `record` in the history, then announce it; False: it is not in the history.

        Failures are warnings, not a failed change: the change is made either way.
        """
        if self.history is None:
            return self.notify(event, warnings)
        kept = True
        try:
            self.history.record(record)
        except ClusterError as error:
            kept = False
            log.warning("%s", error)
            warnings.append(
                f"The change is applied, but {error}: it is not in the change history, so it "
                "cannot be rolled back from there; see the dashboard's log."
            )
        self.notify(event, warnings)
        return kept

    def notify(self, event: Manifest, warnings: list[str]) -> bool:
        """Create an audit Event as the dashboard; a failure is a warning, not a failed change."""
        body: Any = event
        try:
            self._events.create_namespaced_event(
                self.plugin.namespace, body, _request_timeout=TIMEOUT_S, _preload_content=False
            )
        except Exception as exc:  # the change is made: report, don't fail it
            error = translate(exc, action="recording the audit Event")
            log.warning("%s", error)
            warnings.append(f"The change is applied, but {error}; see the dashboard's log.")
            return False
        return True

    # plumbing ----------------------------------------------------------------------------

    def _call(self, call: Callable[[], Any], *, action: str) -> Manifest | None:
        return call_json(call, action=action)

    def _optional(self, call: Callable[[], Any], *, action: str) -> Manifest | None:
        try:
            return self._call(call, action=action)
        except NotFoundError:
            return None


def _raw(dry_run: bool = False) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": TIMEOUT_S}
    if dry_run:
        kwargs["dry_run"] = "All"
    return kwargs


def check_versions(plan: ChangePlan, expected: Mapping[str, str | None]) -> None:
    """ConflictError when the objects the plan was made from are not the ones seen at preview."""
    seen = plan.resource_versions
    for kind, label in (("daemonset", "DaemonSet"), ("configmap", "ConfigMap")):
        if kind in expected and (expected[kind] or None) != seen[kind]:
            was = expected[kind] or "absent"
            now = seen[kind] or "absent"
            raise ConflictError(
                f"The {label} changed since the preview (resourceVersion {was}, now {now}): "
                "someone else edited it. Nothing was written; preview again.",
                status=409,
                reason="Conflict",
            )
