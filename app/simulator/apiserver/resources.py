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


# The kinds the simulator plays a part in (plugin emulation, kubelet, scheduler view).
NODE = ResourceType("", "v1", "nodes", "node", "Node", False, ("no",), True)
POD = ResourceType("", "v1", "pods", "pod", "Pod", True, ("po",), True)
CONFIGMAP = ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",), False)
EVENT = ResourceType("", "v1", "events", "event", "Event", True, ("ev",), False)
NAMESPACE = ResourceType("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), True)
DAEMONSET = ResourceType("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, ("ds",), True)

# Kinds stored and served generically (CRUD, list, watch, dry run, apply), so that
# `kubectl apply --dry-run=server -f` of the rendered chart works. Adding a kind is one
# entry here.
RBAC = "rbac.authorization.k8s.io"
ADMISSION = "admissionregistration.k8s.io"


def _generic(
    group: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    short: str = "",
    status: bool = False,
) -> ResourceType:
    shorts = (short,) if short else ()
    return ResourceType(group, "v1", plural, kind.lower(), kind, namespaced, shorts, status)


GENERIC: tuple[ResourceType, ...] = (
    _generic("", "secrets", "Secret"),
    # the fit check reads them (issue 45); the simulator keeps no usage (status as written)
    _generic("", "resourcequotas", "ResourceQuota", short="quota", status=True),
    _generic("", "services", "Service", short="svc", status=True),
    _generic("", "serviceaccounts", "ServiceAccount", short="sa"),
    _generic("apps", "deployments", "Deployment", short="deploy", status=True),
    _generic("networking.k8s.io", "ingresses", "Ingress", short="ing", status=True),
    _generic(RBAC, "roles", "Role"),
    _generic(RBAC, "rolebindings", "RoleBinding"),
    _generic(RBAC, "clusterroles", "ClusterRole", namespaced=False),
    _generic(RBAC, "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    # What the real install manifests also carry (tests/real_inputs): NFD's prune Job in
    # NVIDIA's chart, the DRA driver chart's admission policies, k3s' `nvidia` RuntimeClass.
    _generic("batch", "jobs", "Job", status=True),
    _generic(
        ADMISSION,
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        namespaced=False,
        status=True,
    ),
    _generic(
        ADMISSION,
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        namespaced=False,
    ),
    _generic("node.k8s.io", "runtimeclasses", "RuntimeClass", namespaced=False),
)

# Dynamic Resource Allocation, GA in Kubernetes 1.34 (app/simulator/dra/driver.py plays its driver).
DRA_GROUP = "resource.k8s.io"
DEVICECLASS = _generic(DRA_GROUP, "deviceclasses", "DeviceClass", namespaced=False)
RESOURCESLICE = _generic(DRA_GROUP, "resourceslices", "ResourceSlice", namespaced=False)
RESOURCECLAIM = _generic(DRA_GROUP, "resourceclaims", "ResourceClaim", status=True)
RESOURCECLAIMTEMPLATE = _generic(DRA_GROUP, "resourceclaimtemplates", "ResourceClaimTemplate")
DRA: tuple[ResourceType, ...] = (DEVICECLASS, RESOURCESLICE, RESOURCECLAIM, RESOURCECLAIMTEMPLATE)

RESOURCES: tuple[ResourceType, ...] = (
    NODE,
    POD,
    CONFIGMAP,
    EVENT,
    NAMESPACE,
    DAEMONSET,
    *GENERIC,
    *DRA,
)
BY_KIND: dict[str, ResourceType] = {r.kind: r for r in RESOURCES}


def find_resource(group: str, plural: str, version: str = "v1") -> ResourceType | None:
    """The served resource with this API group, version and plural name, if any."""
    for resource in RESOURCES:
        if (resource.group, resource.version, resource.plural) == (group, version, plural):
            return resource
    return None


def group_versions() -> list[tuple[str, str]]:
    """Every served (group, version) pair, core ("", "v1") first, in discovery order."""
    seen: list[tuple[str, str]] = []
    for resource in RESOURCES:
        pair = (resource.group, resource.version)
        if pair not in seen:
            seen.append(pair)
    return seen


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
    versions = [
        {"groupVersion": f"{name}/{version}", "version": version}
        for group, version in group_versions()
        if group == name
    ]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def api_group_list() -> dict[str, Any]:
    """`GET /apis`."""
    names = list(dict.fromkeys(group for group, _ in group_versions() if group))
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(n) for n in names]}


def api_group(name: str) -> dict[str, Any] | None:
    """`GET /apis/<group>`, or None for a group the simulator does not serve."""
    if not name or name not in {group for group, _ in group_versions()}:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


def api_resource_list(group: str, version: str = "v1") -> dict[str, Any] | None:
    """`GET /api/v1` or `GET /apis/<group>/<version>`: each resource with its status subresource."""
    if (group, version) not in group_versions():
        return None
    entries: list[dict[str, Any]] = []
    for resource in RESOURCES:
        if (resource.group, resource.version) != (group, version):
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
        if resource is POD:
            entries.append(
                {
                    "name": "pods/log",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "Pod",
                    "verbs": ["get"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }
