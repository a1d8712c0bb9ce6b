"""The record of an applied change: the audit log line, the change history and the Event.

The Event is created with the dashboard's own client, never an impersonated one, so a user
who may change the plugin need not be allowed to write Events. A failure here is a warning
on the change, not a failed change: the change is made either way.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from kubernetes import client

from app.domain.changes.history import ChangeRecord, record_event
from app.domain.changes.models import ChangePlan, ChangeWarning
from app.domain.cluster import Manifest
from app.domain.plugin_target import PluginTarget
from app.errors import ClusterError
from app.kube.calls import TIMEOUT_S
from app.kube.client import translate
from app.kube.history import ChangeHistory
from app.upstream import described

log = logging.getLogger(__name__)
audit_log = logging.getLogger("gpu_slots.audit")

EVENT_REASONS = {"change": "GpuSlotsConfigChanged", "rollback": "GpuSlotsConfigRolledBack"}
# what the audit line (and a mode change's Event) adds for a change applied without a
# preview's token, as the API's caller asked (`?force=true`)
FORCED = "forced: applied without a preview"
COMPONENT = "gpu-slots"


def daemonset_event(
    record: ChangeRecord, daemonset: Manifest, *, namespace: str, reason: str
) -> Manifest:
    """The Event announcing `record`, about `daemonset` (apps/v1), made by GPU Slots."""
    return record_event(
        record,
        namespace=namespace,
        involved={"apiVersion": "apps/v1", "kind": "DaemonSet", **daemonset},
        reason=reason,
        component=COMPONENT,
    )


class AuditTrail:
    """Keeps applied changes in the history and announces them by Events, as the dashboard.

    `history` keeps each change (None: Events only, as in tests of the writes alone).
    """

    def __init__(
        self, api_client: client.ApiClient, *, plugin: PluginTarget, history: ChangeHistory | None
    ) -> None:
        self._events = client.CoreV1Api(api_client)
        self.plugin = plugin
        self.history = history

    def mode_change(
        self,
        plan: ChangePlan,
        daemonset: Manifest,
        record: ChangeRecord,
        warnings: list[ChangeWarning],
    ) -> bool:
        """Log the mode change, keep it in the history, announce it; False: not in the history."""
        verb = "rolled back" if plan.kind == "rollback" else "changed"
        message = (
            f"{record.user} {verb} the device plugin config: {described(plan.before)} -> "
            f"{described(plan.after)} (ConfigMap {plan.configmap_action.value}"
            f"{'; ' + FORCED if record.forced else ''})"
        )
        audit_log.info(
            message,
            extra={
                "user": record.user,
                "kind": plan.kind,
                "change_id": record.id,
                "forced": record.forced,
                "before": plan.before.as_json(),
                "after": plan.after.as_json(),
                "configmap_action": plan.configmap_action.value,
                "daemonset": self.plugin.ref,
            },
        )
        event = daemonset_event(
            record, daemonset, namespace=self.plugin.namespace, reason=EVENT_REASONS[plan.kind]
        )
        event["message"] = message[:1024]
        event["reportingInstance"] = socket.gethostname()[:128]
        return self.record_change(record, event, warnings)

    def record_change(
        self, record: ChangeRecord, event: Manifest, warnings: list[ChangeWarning]
    ) -> bool:
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
            warnings.append(ChangeWarning("not-in-history", {"error": str(error)}))
        self.notify(event, warnings)
        return kept

    def notify(self, event: Manifest, warnings: list[ChangeWarning]) -> bool:
        """Create an audit Event as the dashboard; a failure is a warning, not a failed change."""
        body: Any = event
        try:
            self._events.create_namespaced_event(
                self.plugin.namespace, body, _request_timeout=TIMEOUT_S, _preload_content=False
            )
        except Exception as exc:  # the change is made: report, don't fail it
            error = translate(exc, action="recording the audit Event")
            log.warning("%s", error)
            warnings.append(ChangeWarning("event-not-written", {"error": str(error)}))
            return False
        return True
