"""What a request URL addresses: discovery documents, or a resource, object and subresource."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.simulator.apiserver import resources as res
from app.simulator.apiserver.errors import ApiError


@dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    resource: res.ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def not_found() -> ApiError:
    return ApiError("NotFound", "the server could not find the requested resource")


def _parse_target(group: str, version: str, parts: Sequence[str]) -> Target:
    def resource_for(plural: str) -> res.ResourceType:
        found = res.find_resource(group, plural, version)
        if found is None:
            raise not_found()
        return found

    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] != "status":
        namespace = parts[1]
        resource = resource_for(parts[2])
        if not resource.namespaced:
            raise not_found()
        name = parts[3] if len(parts) > 3 else None
        sub = parts[4] if len(parts) > 4 else None
        if len(parts) > 5:
            raise not_found()
        return Target(resource, namespace, name, sub)
    if not parts or len(parts) > 3:
        raise not_found()
    resource = resource_for(parts[0])
    name = parts[1] if len(parts) > 1 else None
    sub = parts[2] if len(parts) > 2 else None
    if resource.namespaced and name is not None:
        raise not_found()
    return Target(resource, None, name, sub)


def target_of(path: str) -> Target:
    """The resource a `/api/v1/...` or `/apis/<group>/<version>/...` path names (404 if none)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        return _parse_target("", "v1", parts[2:])
    if len(parts) >= 3 and parts[0] == "apis":
        return _parse_target(parts[1], parts[2], parts[3:])
    raise not_found()


def verb_of(method: str, target: Target, watch: bool) -> str:
    """The API verb of a request (what faults and request counts are keyed by)."""
    if method == "GET":
        if watch:
            return "watch"
        return "get" if target.name is not None else "list"
    return {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if target.name is not None else "deletecollection",
    }.get(method, method.lower())


def is_true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def discovery(path: str) -> dict[str, Any] | None:
    """The discovery document at `path` (/version, /api, /apis, a group or a group-version)."""
    if path == "/version":
        return dict(res.SERVER_VERSION)
    if path == "/api":
        return res.api_versions()
    if path == "/apis":
        return res.api_group_list()
    if path == "/api/v1":
        return res.api_resource_list("", "v1")
    parts = path.split("/")[1:]
    if len(parts) == 2 and parts[0] == "apis":
        return res.api_group(parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return res.api_resource_list(parts[1], parts[2])
    return None
