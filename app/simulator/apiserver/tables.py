"""Server-side printing: `Table` answers for `kubectl get`, as the real API server sends them.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io`; without a Table it can
only print NAME and AGE. Columns follow the real server's printers for the served kinds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from app.simulator.apiserver.store import JsonObject, dumps

Row = list[Any]
Column = tuple[str, str, int]  # name, type, priority (1 = only with -o wide)


def parse_time(text: str | None) -> datetime | None:
    """Any RFC 3339 time Kubernetes writes: `Z` or an offset, with or without fractions."""
    if not text or not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def age(created: str | None, now: datetime) -> str:
    """Kubernetes' short human duration: 45s, 12m, 5h, 3d."""
    then = parse_time(created)
    if then is None:
        return "<unknown>"
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _pod_row(pod: JsonObject, now: datetime) -> Row:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    ready = sum(1 for s in statuses if s.get("ready"))
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for container in statuses:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    if pod["metadata"].get("deletionTimestamp") and reason != "Failed":
        reason = "Terminating"
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    meta = pod["metadata"]
    return [
        meta["name"],
        f"{ready}/{total}",
        reason,
        restarts,
        age(meta.get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        (pod.get("spec") or {}).get("nodeName") or "<none>",
        "<none>",
        "<none>",
    ]


def _node_row(node: JsonObject, now: datetime) -> Row:
    meta = node["metadata"]
    status = node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = meta.get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = status.get("nodeInfo") or {}
    internal = next(
        (a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"),
        "<none>",
    )
    return [
        meta["name"],
        state,
        ",".join(roles) or "<none>",
        age(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        internal,
        "<none>",
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


def _ds_row(ds: JsonObject, now: datetime) -> Row:
    status = ds.get("status") or {}
    selector = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector")
    return [
        ds["metadata"]["name"],
        status.get("desiredNumberScheduled", 0),
        status.get("currentNumberScheduled", 0),
        status.get("numberReady", 0),
        status.get("updatedNumberScheduled", 0),
        status.get("numberAvailable", 0),
        ",".join(f"{k}={v}" for k, v in (selector or {}).items()) or "<none>",
        age(ds["metadata"].get("creationTimestamp"), now),
    ]


def _cm_row(cm: JsonObject, now: datetime) -> Row:
    data = len(cm.get("data") or {}) + len(cm.get("binaryData") or {})
    return [cm["metadata"]["name"], data, age(cm["metadata"].get("creationTimestamp"), now)]


def _secret_row(secret: JsonObject, now: datetime) -> Row:
    data = len(secret.get("data") or {})
    meta = secret["metadata"]
    return [meta["name"], secret.get("type", ""), data, age(meta.get("creationTimestamp"), now)]


def _ns_row(ns: JsonObject, now: datetime) -> Row:
    phase = (ns.get("status") or {}).get("phase", "Active")
    return [ns["metadata"]["name"], phase, age(ns["metadata"].get("creationTimestamp"), now)]


def _event_row(event: JsonObject, now: datetime) -> Row:
    involved = event.get("involvedObject") or {}
    seen = (
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or event["metadata"].get("creationTimestamp")
    )
    return [
        age(seen, now),
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        event.get("message", ""),
    ]


def _name_age_row(obj: JsonObject, now: datetime) -> Row:
    return [obj["metadata"]["name"], age(obj["metadata"].get("creationTimestamp"), now)]


def _slice_row(obj: JsonObject, now: datetime) -> Row:
    spec = obj.get("spec") or {}
    return [
        obj["metadata"]["name"],
        spec.get("nodeName") or "<none>",
        spec.get("driver", ""),
        (spec.get("pool") or {}).get("name", ""),
        age(obj["metadata"].get("creationTimestamp"), now),
    ]


def _claim_row(obj: JsonObject, now: datetime) -> Row:
    status = obj.get("status") or {}
    states = []
    if status.get("allocation"):
        states.append("allocated")
    if status.get("reservedFor"):
        states.append("reserved")
    if obj["metadata"].get("deletionTimestamp"):
        states.append("deleted")
    return [
        obj["metadata"]["name"],
        ",".join(states) or "pending",
        age(obj["metadata"].get("creationTimestamp"), now),
    ]


def _columns(*names: str, wide: Sequence[str] = (), integers: Sequence[str] = ()) -> list[Column]:
    """Column definitions: strings unless named in `integers`; `wide` ones only with -o wide."""
    return [
        (name, "integer" if name in integers else "string", 1 if name in wide else 0)
        for name in (*names, *wide)
    ]


_NAME_AGE = _columns("Name", "Age")
_POD_COLUMNS = _columns(
    "Name",
    "Ready",
    "Status",
    "Restarts",
    "Age",
    wide=("IP", "Node", "Nominated Node", "Readiness Gates"),
)
_NODE_COLUMNS = _columns(
    "Name",
    "Status",
    "Roles",
    "Age",
    "Version",
    wide=("Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"),
)
_DS_COUNTS = ("Desired", "Current", "Ready", "Up-to-date", "Available")
_DS_COLUMNS = _columns("Name", *_DS_COUNTS, "Node Selector", "Age", integers=_DS_COUNTS)
_EVENT_COLUMNS = _columns("Last Seen", "Type", "Reason", "Object", "Message")

_PRINTERS: dict[str, tuple[Sequence[Column], Callable[[JsonObject, datetime], Row]]] = {
    "DeviceClass": (_NAME_AGE, _name_age_row),
    "ResourceClaimTemplate": (_NAME_AGE, _name_age_row),
    "ResourceSlice": (_columns("Name", "Node", "Driver", "Pool", "Age"), _slice_row),
    "ResourceClaim": (_columns("Name", "State", "Age"), _claim_row),
    "Pod": (_POD_COLUMNS, _pod_row),
    "Node": (_NODE_COLUMNS, _node_row),
    "DaemonSet": (_DS_COLUMNS, _ds_row),
    "ConfigMap": (_columns("Name", "Data", "Age", integers=("Data",)), _cm_row),
    "Namespace": (_columns("Name", "Status", "Age"), _ns_row),
    "Secret": (_columns("Name", "Type", "Data", "Age"), _secret_row),
    "Event": (_EVENT_COLUMNS, _event_row),
}


# Kinds without a printer of their own get the API server's default columns.
_DEFAULT_PRINTER: tuple[Sequence[Column], Callable[[JsonObject, datetime], Row]] = (
    _NAME_AGE,
    _name_age_row,
)


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def table_event(kind: str, line: bytes, *, now: datetime, with_columns: bool) -> bytes:
    """One watch event line with its object printed as a one-row Table (`kubectl get -w`).

    The first event carries the column definitions; later ones leave them out, as the
    API server does, so kubectl prints the header once.
    """
    event = json.loads(line)
    obj = event.get("object") or {}
    if event.get("type") in ("ERROR", "BOOKMARK") or "metadata" not in obj:
        return line
    rv = int(obj["metadata"].get("resourceVersion") or 0)
    printed = table(kind, [obj], rv, now=now)
    if printed is None:
        return line
    if not with_columns:
        printed["columnDefinitions"] = []
    return dumps({"type": event["type"], "object": printed}) + b"\n"


def table(kind: str, objects: Sequence[JsonObject], rv: int, *, now: datetime) -> JsonObject | None:
    """A meta.k8s.io/v1 Table of these objects (default columns for a kind without a printer)."""
    columns, row = _PRINTERS.get(kind, _DEFAULT_PRINTER)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": [
            {
                "name": name,
                "type": kind_,
                "format": "name" if name == "Name" else "",
                "description": "",
                "priority": priority,
            }
            for name, kind_, priority in columns
        ],
        "rows": [
            {
                "cells": row(obj, now),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj["metadata"],
                },
            }
            for obj in objects
        ],
    }
