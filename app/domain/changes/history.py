"""One change record for every kind of change (mode, split), and its Event.

Each applied change is a record (who, when, what before, what after: typed, the plugin's
settings for a mode change, the node's split for a split, read once when the record is
read, so nothing after it handles a stored value of the wrong kind); the durable history
keeps it as a ConfigMap (app.domain.changes.durable), and a Kubernetes Event on the object
it changed, named after the change id and labelled `gpu-slots.io/change=<kind>`, tells
`kubectl get events` about it (the API server drops Events after an hour, so the Event is
the notification, never the history). Pure: records to manifests and back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from app.domain.bounds import MAX_COUNT, cut
from app.domain.changes.models import ChangeWarning, PluginSettings, warning_from_json
from app.domain.changes.split_models import SplitState
from app.domain.cluster import Manifest
from app.domain.snapshot import Mode

CHANGE_LABEL = "gpu-slots.io/change"
RECORD_ANNOTATION = "gpu-slots.io/change-record"
EVENT_PREFIX = "gpu-slots-change."
RecordKind = Literal["mode", "split"]
# what a record's `before` and `after` hold: a mode change's settings, a node's split
RecordSide = PluginSettings | SplitState
_SIDE_TYPES: dict[str, type[RecordSide]] = {"mode": PluginSettings, "split": SplitState}


@dataclass(frozen=True)
class ChangeRecord:
    """One applied change: enough to list it and to undo it."""

    id: str
    kind: RecordKind
    action: Literal["change", "rollback"]
    at: datetime
    user: str
    summary: str
    before: RecordSide
    after: RecordSide
    node: str | None = None
    rolls_back: str | None = None  # the id of the change this one undid
    warnings: tuple[ChangeWarning, ...] = ()  # what the apply warned about (a lost answer, ...)
    # the rollout's facts (app.domain.changes.rollout_record): nodes already failing, the
    # maxUnavailable raised to pass them; None for changes that roll out no DaemonSet
    rollout: dict[str, Any] | None = None
    forced: bool = False  # applied without a preview's token, as asked (`?force=true`)

    def __post_init__(self) -> None:
        side = _SIDE_TYPES[self.kind]
        if not isinstance(self.before, side) or not isinstance(self.after, side):
            raise TypeError("record-side-of-another-kind", self.kind, side.__name__)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "action": self.action,
            "at": self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "user": self.user,
            "summary": self.summary,
            "node": self.node,
            "before": self.before.as_json(),
            "after": self.after.as_json(),
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
    typed_before = side_from_json(kind, "before", before)
    typed_after = side_from_json(kind, "after", after)
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
        before=typed_before,
        after=typed_after,
        node=_optional_str(data.get("node")),
        rolls_back=_optional_str(data.get("rollsBack")),
        warnings=tuple(warning_from_json(w) for w in warnings),
        rollout=data["rollout"] if isinstance(data.get("rollout"), dict) else None,
        forced=data.get("forced") is True,
    )


# The typed sides. One key spelling for both kinds, the API's camelCase; records written
# before round 5 spelled a split's keys in snake_case, and read as well (docs/ADMIN.md).
_OLD_SPELLING = {"kubernetes_gpus": "kubernetesGpus", "config_key": "configKey"}
MAX_RECORD_GPUS = 1024  # GPUs a split record names; no node holds more
MAX_NAME = 253  # a Kubernetes name, resource name or label value is at most this long
_MODES = frozenset(m.value for m in Mode)


def _name(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NAME


def _optional_name(value: object) -> bool:
    return value is None or _name(value)


def _optional_text(value: object) -> bool:
    return value is None or isinstance(value, str)  # bounded by the record's size


def _flag(value: object) -> bool:
    return isinstance(value, bool)


def _count(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _mode(value: object) -> bool:
    return isinstance(value, str) and value in _MODES


def _uuids(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) <= MAX_RECORD_GPUS
        and all(_name(item) for item in value)
    )


_MODE_FIELDS: dict[str, Callable[[object], bool]] = {
    "mode": _mode,
    "replicas": _count,
    "resource": _name,
    "renameByDefault": _flag,
    "failRequestsGreaterThanOne": _flag,
    "error": _optional_text,
}
_SPLIT_FIELDS: dict[str, Callable[[object], bool]] = {
    "daemonset": _name,
    "own": _flag,
    "kubernetesGpus": _uuids,
    "mode": _mode,
    "replicas": _count,
    "configKey": _optional_name,
}


def _fields(
    side: str, values: dict[str, Any], kinds: dict[str, Callable[[object], bool]]
) -> dict[str, Any]:
    """The fields of `values` its kind reads, by their camelCase name; RecordInvalid naming
    (as spelled in the record) the first one of the wrong kind. Others are left out."""
    found: dict[str, Any] = {}
    for name, value in values.items():
        key = _OLD_SPELLING.get(name, name)
        valid = kinds.get(key)
        if valid is None:
            continue
        if not valid(value):
            raise RecordInvalid("field-invalid", field=f"{side}.{str(name)[:64]}", value=cut(value))
        found[key] = value
    return found


def mode_side(side: str, values: dict[str, Any]) -> PluginSettings:
    """A mode record's `before` or `after`: the plugin's settings (a field left out reads
    as unknown, off or empty)."""
    found = _fields(side, values, _MODE_FIELDS)
    return PluginSettings(
        mode=Mode(found.get("mode", Mode.UNKNOWN.value)),
        replicas=found.get("replicas", 1),
        resource=found.get("resource", ""),
        rename_by_default=found.get("renameByDefault", False),
        fail_requests_greater_than_one=found.get("failRequestsGreaterThanOne", False),
        error=found.get("error"),
    )


def split_side(side: str, values: dict[str, Any]) -> SplitState:
    """A split record's `before` or `after`: the node's governing DaemonSet and its GPUs."""
    found = _fields(side, values, _SPLIT_FIELDS)
    return SplitState(
        daemonset=found.get("daemonset", ""),
        own=found.get("own", False),
        kubernetes_gpus=tuple(found.get("kubernetesGpus", ())),
        mode=found.get("mode", Mode.BASIC.value),
        replicas=found.get("replicas", 1),
        config_key=found.get("configKey"),
        per_node_config="configKey" in found,
    )


_SIDES: dict[str, Callable[[str, dict[str, Any]], RecordSide]] = {
    "mode": mode_side,
    "split": split_side,
}


def side_from_json(kind: RecordKind, side: str, values: dict[str, Any]) -> RecordSide:
    """A `kind` record's typed `side` ("before", "after") from its JSON; RecordInvalid
    naming the first field of the wrong kind."""
    return _SIDES[kind](side, values)


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def history(records: list[ChangeRecord]) -> list[ChangeRecord]:
    """`records` newest first."""
    return sorted(records, key=lambda r: (r.at, r.id), reverse=True)
