"""One change record for every kind of change (mode, split), and its Event.

Each applied change is a record (who, when, what before, what after); the durable history
keeps it as a ConfigMap (app.domain.changes.durable), and a Kubernetes Event on the object
it changed, named after the change id and labelled `gpu-slots.io/change=<kind>`, tells
`kubectl get events` about it (the API server drops Events after an hour, so the Event is
the notification, never the history). Pure: records to manifests and back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from app.domain.bounds import MAX_COUNT, cut
from app.domain.changes.models import ChangeWarning, warning_from_json
from app.domain.cluster import Manifest

CHANGE_LABEL = "gpu-slots.io/change"
RECORD_ANNOTATION = "gpu-slots.io/change-record"
EVENT_PREFIX = "gpu-slots-change."
ChangeKind = Literal["mode", "split"]


@dataclass(frozen=True)
class ChangeRecord:
    """One applied change: enough to list it and to undo it."""

    id: str
    kind: ChangeKind
    action: Literal["change", "rollback"]
    at: datetime
    user: str
    summary: str
    before: dict[str, Any]
    after: dict[str, Any]
    node: str | None = None
    rolls_back: str | None = None  # the id of the change this one undid
    warnings: tuple[ChangeWarning, ...] = ()  # what the apply warned about (a lost answer, ...)
    # the rollout's facts (app.domain.changes.rollout_record): nodes already failing, the
    # maxUnavailable raised to pass them; None for changes that roll out no DaemonSet
    rollout: dict[str, Any] | None = None
    forced: bool = False  # applied without a preview's token, as asked (`?force=true`)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "action": self.action,
            "at": self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "user": self.user,
            "summary": self.summary,
            "node": self.node,
            "before": self.before,
            "after": self.after,
            "rollsBack": self.rolls_back,
            "warnings": [w.as_json() for w in self.warnings],
            "rollout": self.rollout,
            "forced": self.forced,
        }


class RecordInvalid(ValueError):
    """A stored record GPU Slots cannot read: `why` names what is wrong (worded by the web
    layer as `unreadable.<why>`), `params` its values (an `error` param quotes a parser)."""

    def __init__(self, why: str, /, **params: object) -> None:
        super().__init__(why, params)
        self.why = why
        self.params = params


def change_id(at: datetime, salt: str) -> str:
    """A sortable, DNS-safe id: time to the millisecond plus a short salt."""
    stamp = at.astimezone(UTC).strftime("%Y%m%d-%H%M%S-%f")[:-3]
    return f"{stamp}-{salt[:6].lower()}"


def record_event(
    record: ChangeRecord, *, namespace: str, involved: Manifest, reason: str, component: str
) -> Manifest:
    """The Event that holds `record` (involvedObject: the object the change wrote)."""
    meta = involved.get("metadata") or {}
    stamp = record.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": EVENT_PREFIX + record.id,
            "namespace": namespace,
            "labels": {CHANGE_LABEL: record.kind},
            "annotations": {RECORD_ANNOTATION: json.dumps(record.as_json(), sort_keys=True)},
        },
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", "v1"),
            "kind": involved.get("kind", ""),
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": f"{record.user}: {record.summary}"[:1024],
        "type": "Normal",
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def record_from_json(data: Any) -> ChangeRecord:
    """The record `as_json` wrote; RecordInvalid saying what is wrong when it is not one."""
    if not isinstance(data, dict):
        raise RecordInvalid("not-an-object")
    try:
        return _record(data)
    except KeyError as exc:
        raise RecordInvalid("missing-field", field=str(exc.args[0])) from exc
    except RecordInvalid:
        raise
    except (TypeError, ValueError) as exc:
        raise RecordInvalid("malformed", error=str(exc)[:200]) from exc


def _record(data: dict[str, Any]) -> ChangeRecord:
    at = datetime.strptime(str(data["at"]), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    kind, action = data["kind"], data["action"]
    if kind not in ("mode", "split") or action not in ("change", "rollback"):
        raise RecordInvalid("unknown-kind", kind=str(kind)[:64], action=str(action)[:64])
    before, after = data.get("before") or {}, data.get("after") or {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        raise RecordInvalid("before-after-not-objects")
    _check_side("before", before)
    _check_side("after", after)
    warnings = data.get("warnings") or []
    if not isinstance(warnings, list):
        raise RecordInvalid("warnings-not-list")
    return ChangeRecord(
        id=str(data["id"]),
        kind=kind,
        action=action,
        at=at,
        user=str(data.get("user", "")),
        summary=str(data.get("summary", "")),
        before=dict(before),
        after=dict(after),
        node=_optional_str(data.get("node")),
        rolls_back=_optional_str(data.get("rollsBack")),
        warnings=tuple(warning_from_json(w) for w in warnings),
        rollout=data["rollout"] if isinstance(data.get("rollout"), dict) else None,
        forced=data.get("forced") is True,
    )


# What each field of `before`/`after` holds when GPU Slots wrote it (PluginSettings and
# SplitState `as_json`). The record is read once, here: a rollback reads typed values after
# it, so a forged `"replicas": "four"` is an unreadable record, never a failed int().
_SIDE_TEXT = ("mode", "resource", "daemonset")
_SIDE_OPTIONAL_TEXT = ("error", "config_key")
_SIDE_FLAGS = ("renameByDefault", "failRequestsGreaterThanOne", "own")
MAX_RECORD_GPUS = 1024  # GPUs a split record names; no node holds more


def _check_side(side: str, values: dict[str, Any]) -> None:
    """RecordInvalid("field-invalid") naming the first field of `values` of the wrong kind."""
    for name, value in values.items():
        if not _side_value_ok(name, value):
            raise RecordInvalid("field-invalid", field=f"{side}.{str(name)[:64]}", value=cut(value))


def _side_value_ok(name: str, value: Any) -> bool:
    if name == "replicas":
        return type(value) is int and 0 <= value <= MAX_COUNT
    if name == "kubernetes_gpus":
        return (
            isinstance(value, list)
            and len(value) <= MAX_RECORD_GPUS
            and all(isinstance(item, str) for item in value)
        )
    if name in _SIDE_TEXT:
        return isinstance(value, str)
    if name in _SIDE_OPTIONAL_TEXT:
        return value is None or isinstance(value, str)
    if name in _SIDE_FLAGS:
        return isinstance(value, bool)
    return True  # a field no rollback reads is shown as it is


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def history(records: list[ChangeRecord]) -> list[ChangeRecord]:
    """`records` newest first."""
    return sorted(records, key=lambda r: (r.at, r.id), reverse=True)
