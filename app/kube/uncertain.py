"""Writes whose answer was lost: re-read before deciding what happened.

A timeout, a dropped connection or a 5xx does not say the write failed: the API server may
have committed it and lost only the answer. The writer therefore re-reads the object and
judges it (app.domain.changes.outcome) before undoing anything, and tells the admin and
the audit log the state it actually found: old, new, or the half state by name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.domain.changes.models import ChangePlan, ChangeWarning
from app.domain.changes.outcome import Found, configmap_found, daemonset_found, describe
from app.domain.cluster import Manifest
from app.domain.plugin_target import PluginTarget
from app.errors import ClusterError, ClusterUnavailableError
from app.kube.concurrent import ConcurrentChange
from app.upstream import described

audit_log = logging.getLogger("gpu_slots.audit")

Reader = Callable[[], Manifest | None]


class ApplyFailed(ClusterError):
    """A change failed part way; `restored`: the cluster is as before; `state`: what was found."""

    def __init__(
        self, message: str, *, cause: ClusterError, restored: bool, state: str = ""
    ) -> None:
        super().__init__(message, status=cause.status, reason=cause.reason)
        self.cause = cause
        self.restored = restored
        self.state = state


class NotWritten(Exception):
    """Re-reading shows the DaemonSet untouched: the write did not happen."""


def is_uncertain(error: ClusterError) -> bool:
    """Whether the write may have happened although it failed (timeout, no answer, 5xx)."""
    if isinstance(error, ClusterUnavailableError):
        return True
    return error.status is None or error.status == 0 or error.status >= 500


class Settle:
    """Decides, by re-reading, what a failed write of `plan` actually did."""

    def __init__(
        self,
        plan: ChangePlan,
        read_configmap: Reader,
        read_daemonset: Reader,
        plugin: PluginTarget,
    ) -> None:
        self.plan = plan
        self._read_configmap = read_configmap
        self._read_daemonset = read_daemonset
        self.plugin = plugin  # the DaemonSet, for messages

    def configmap_write(self, exc: ClusterError, warnings: list[ChangeWarning]) -> Manifest | None:
        """The ConfigMap as written despite `exc`, or the error to raise."""
        if self.plan.configmap is None or not is_uncertain(exc):
            raise exc
        found, current = self._configmap(exc)
        if found is Found.NEW:
            warnings.append(
                ChangeWarning("answer-lost-written", {"kind": "ConfigMap", "error": str(exc)})
            )
            return current
        if found is Found.OLD:
            raise type(exc)(
                f"{exc}. Re-reading shows the ConfigMap unchanged: nothing was written.",
                status=exc.status,
                reason=exc.reason,
            ) from exc
        state = describe(configmap=found, daemonset=Found.OLD)
        raise ApplyFailed(
            f"{exc}. Re-reading the ConfigMap found neither the old nor the new config "
            f"(state {state}). Check it with kubectl before retrying.",
            cause=exc,
            restored=False,
            state=state,
        ) from exc

    def daemonset_write(self, exc: ClusterError, warnings: list[ChangeWarning]) -> Manifest:
        """The DaemonSet as written despite `exc`; NotWritten when untouched; else ApplyFailed."""
        if not is_uncertain(exc):
            raise NotWritten from exc
        try:
            current = self._read_daemonset()
        except ClusterError as error:
            raise self._unknown(exc, error) from exc
        found = daemonset_found(current, self.plan)
        if found is Found.NEW and current is not None:
            warnings.append(
                ChangeWarning("answer-lost-written", {"kind": "DaemonSet", "error": str(exc)})
            )
            return current
        if found is Found.OLD:
            raise NotWritten from exc
        configmap = None if self.plan.configmap is None else Found.NEW
        state = describe(configmap=configmap, daemonset=found)
        raise ApplyFailed(
            f"{exc}. Re-reading the DaemonSet found a change that is not ours (state {state}). "
            "Nothing was undone; check both objects with kubectl.",
            cause=exc,
            restored=False,
            state=state,
        ) from exc

    def deleted(self, exc: ClusterError) -> bool:
        """Whether the ConfigMap is gone although its deletion failed (answer lost)."""
        if not is_uncertain(exc):
            return False
        try:
            return self._read_configmap() is None
        except ClusterError:
            return False

    def undo(self, cause: ClusterError, undo_error: ClusterError) -> ApplyFailed | None:
        """After the undo of the ConfigMap failed: what it holds (None: still the new config)."""
        if not is_uncertain(undo_error):
            return None
        try:
            found, _ = self._configmap(undo_error)
        except ApplyFailed as unknown:
            return unknown
        if found is Found.NEW:
            return None
        state = describe(configmap=found, daemonset=Found.OLD)
        restored = found is Found.OLD
        return ApplyFailed(
            f"{cause}. Undoing the ConfigMap lost its answer ({undo_error}); re-reading shows "
            + (
                "it was undone: the cluster is as before the change."
                if restored
                else f"state {state}"
            ),
            cause=cause,
            restored=restored,
            state=state,
        )

    def _configmap(self, exc: ClusterError) -> tuple[Found, Manifest | None]:
        try:
            current = self._read_configmap()
        except ClusterError as error:
            raise self._unknown(exc, error) from exc
        return configmap_found(current, self.plan), current

    def _unknown(self, cause: ClusterError, error: ClusterError) -> ApplyFailed:
        return ApplyFailed(
            f"{cause}. The answer was lost and re-reading failed too ({error}): the state of "
            "the DaemonSet and its ConfigMap is unknown. Check with: kubectl -n "
            f"{self.plugin.namespace} get daemonset {self.plugin.name} -o yaml",
            cause=cause,
            restored=False,
            state="unknown",
        )


def audit_failure(
    plan: ChangePlan, failed: ApplyFailed | ConcurrentChange, *, user: str, daemonset: str
) -> None:
    """The audit log records failed changes too, with the state the cluster was left in."""
    if isinstance(failed, ConcurrentChange):  # its writes undone: another change's stand
        state, restored = f"lost to change {failed.winner or '(not of GPU Slots)'}", True
    else:
        state, restored = failed.state, failed.restored
    audit_log.warning(
        f"{user} tried to change the device plugin config: {described(plan.before)} -> "
        f"{described(plan.after)}; it failed, {state or 'state unknown'}",
        extra={
            "user": user,
            "kind": plan.kind,
            "outcome": "failed",
            "state": state,
            "restored": restored,
            "error": str(failed.cause),
            "daemonset": daemonset,
        },
    )
