"""The Kubernetes kinds the simulator serves, and the discovery documents describing them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_STATUS_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class ResourceType:
    """One served kind: where it lives in the URL space and how discovery describes it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...]
    has_status: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


NODE = ResourceType("", "v1", "nodes", "node", "Node", False, ("no",), True)
POD = ResourceType("", "v1", "pods", "pod", "Pod", True, ("po",), True)
CONFIGMAP = ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",), False)
EVENT = ResourceType("", "v1", "events", "event", "Event", True, ("ev",), False)
NAMESPACE = ResourceType("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), True)
DAEMONSET = ResourceType("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, ("ds",), True)

# Dynamic Resource Allocation, GA in Kubernetes 1.34 (app/simulator/dra.py plays its driver).
DRA_GROUP = "resource.k8s.io"
DEVICECLASS = ResourceType(
    DRA_GROUP, "v1", "deviceclasses", "deviceclass", "DeviceClass", False, (), False
)
RESOURCESLICE = ResourceType(
    DRA_GROUP, "v1", "resourceslices", "resourceslice", "ResourceSlice", False, (), False
)
RESOURCECLAIM = ResourceType(
    DRA_GROUP, "v1", "resourceclaims", "resourceclaim", "ResourceClaim", True, (), True
)
RESOURCECLAIMTEMPLATE = ResourceType(
    DRA_GROUP,
    "v1",
    "resourceclaimtemplates",
    "resourceclaimtemplate",
    "ResourceClaimTemplate",
    True,
    (),
    False,
)

RESOURCES: tuple[ResourceType, ...] = (
    NODE,
    POD,
    CONFIGMAP,
    EVENT,
    NAMESPACE,
    DAEMONSET,
    DEVICECLASS,
    RESOURCESLICE,
    RESOURCECLAIM,
    RESOURCECLAIMTEMPLATE,
)
GROUPS: tuple[str, ...] = ("apps", DRA_GROUP)
BY_KIND: dict[str, ResourceType] = {r.kind: r for r in RESOURCES}


def find_resource(group: str, plural: str) -> ResourceType | None:
    """The served resource with this API group and plural name, if any."""
    for resource in RESOURCES:
        if resource.group == group and resource.plural == plural:
            return resource
    return None


def lookup_kind(name: str) -> ResourceType | None:
    """A resource by kind, plural, singular or short name (case-insensitive)."""
    wanted = name.lower()
    for resource in RESOURCES:
        names = {resource.kind.lower(), resource.plural, resource.singular, *resource.short_names}
        if wanted in names:
            return resource
    return None


def api_versions() -> dict[str, Any]:
    """`GET /api`."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str) -> dict[str, Any]:
    version = {"groupVersion": f"{name}/v1", "version": "v1"}
    return {"name": name, "versions": [version], "preferredVersion": version}


def api_group_list() -> dict[str, Any]:
    """`GET /apis`."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in GROUPS]}


def api_group(name: str) -> dict[str, Any]:
    """`GET /apis/<group>`."""
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


def api_resource_list(group: str) -> dict[str, Any]:
    """`GET /api/v1` or `GET /apis/apps/v1`: each resource with its status subresource."""
    entries: list[dict[str, Any]] = []
    for resource in RESOURCES:
        if resource.group != group:
            continue
        entries.append(
            {
                "name": resource.plural,
                "singularName": resource.singular,
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": list(_VERBS),
                "shortNames": list(resource.short_names),
                "storageVersionHash": "",
            }
        )
        if resource.has_status:
            entries.append(
                {
                    "name": f"{resource.plural}/status",
                    "singularName": "",
                    "namespaced": resource.namespaced,
                    "kind": resource.kind,
                    "verbs": list(_STATUS_VERBS),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/v1" if group else "v1",
        "resources": entries,
    }
