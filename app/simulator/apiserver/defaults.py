"""What the API server fills in or normalises on a write, before the object is stored.

- Pods: a container that sets a limit but no request for a resource gets the request
  equal to the limit (the API server's pod defaulting). For extended resources such as
  `nvidia.com/gpu` this is what the scheduler and `kubectl describe node` count.
  Every quantity (pods, DaemonSet pod templates, node capacity and allocatable) is stored
  in its canonical form: `"2000"` becomes `"2k"`, as a real API server stores it.
- Secrets: `type` defaults to `Opaque`; `stringData` is merged into `data` (base64) and
  never stored, as the API server does.
- Events: times are parsed and written back the way the API server serialises them
  (`metav1.Time`: seconds, UTC, `Z`; `metav1.MicroTime`: six fractional digits), so a
  client that wrote `+00:00` or fractions reads back what a real cluster returns.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from app.simulator.apiserver.errors import invalid
from app.simulator.apiserver.quantities import canonical_node_status, canonical_pod_spec
from app.simulator.apiserver.resources import DAEMONSET, EVENT, NODE, POD, ResourceType
from app.simulator.apiserver.store import JsonObject

_TIME_FIELDS = ("firstTimestamp", "lastTimestamp")
_MICRO_TIME_FIELDS = ("eventTime",)


def _containers(spec: Any) -> list[dict[str, Any]]:
    if not isinstance(spec, dict):
        return []
    found: list[dict[str, Any]] = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if isinstance(items, list):
            found += [c for c in items if isinstance(c, dict)]
    return found


def default_requests_from_limits(pod: JsonObject) -> None:
    """Copy each limit without a request into requests (pod create only)."""
    for container in _containers(pod.get("spec")):
        resources = container.get("resources")
        if not isinstance(resources, dict):
            continue
        limits = resources.get("limits")
        if not isinstance(limits, dict) or not limits:
            continue
        requests = resources.get("requests")
        if not isinstance(requests, dict):
            requests = {}
        for name, value in limits.items():
            requests.setdefault(name, value)
        resources["requests"] = requests


def _parse(kind: str, name: str, field: str, value: Any) -> datetime:
    moment = None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
    if moment is None:
        raise invalid(kind, name, field, f"{value!r} is not an RFC 3339 time")
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)


def normalise_event_times(event: JsonObject) -> None:
    """Rewrite the event's times in the API server's own formats (or refuse a bad one)."""
    name = str((event.get("metadata") or {}).get("name", ""))
    for field in _TIME_FIELDS:
        if event.get(field):
            moment = _parse("Event", name, field, event[field])
            event[field] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    series = event.get("series")
    targets: list[tuple[dict[str, Any], str, str]] = [
        (event, f, f) for f in _MICRO_TIME_FIELDS if event.get(f)
    ]
    if isinstance(series, dict) and series.get("lastObservedTime"):
        targets.append((series, "lastObservedTime", "series.lastObservedTime"))
    for holder, field, path in targets:
        moment = _parse("Event", name, path, holder[field])
        holder[field] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_secret(secret: JsonObject) -> None:
    """Opaque by default; stringData written into data."""
    if not secret.get("type"):
        secret["type"] = "Opaque"
    plain = secret.pop("stringData", None)
    if isinstance(plain, dict) and plain:
        existing = secret.get("data")
        data: dict[str, Any] = existing if isinstance(existing, dict) else {}
        for key, value in plain.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data


def canonical_quantities(resource: ResourceType, obj: JsonObject) -> None:
    """Quantities as the API server serialises them, however the object was written."""
    if resource is POD:
        canonical_pod_spec(obj.get("spec"))
    elif resource is DAEMONSET:
        template = (obj.get("spec") or {}).get("template") or {}
        canonical_pod_spec(template.get("spec") if isinstance(template, dict) else None)
    elif resource is NODE:
        canonical_node_status(obj)


def apply_defaults(resource: ResourceType, obj: JsonObject, *, creating: bool) -> None:
    """Fill in and normalise the object in place, as the API server does on a write."""
    if resource is POD and creating:
        default_requests_from_limits(obj)
    canonical_quantities(resource, obj)
    if resource is EVENT:
        normalise_event_times(obj)
    elif resource.kind == "Secret":
        default_secret(obj)
