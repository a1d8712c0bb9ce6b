"""Every Kubernetes API call GPU Slots makes, declared once.

The Helm chart's RBAC is tested against this list (tests/chart), and app/kube only makes
calls listed here, so the chart grants exactly what the code needs and nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ApiCall:
    """One verb on one resource, and whether it is limited to the plugin's named objects."""

    api_group: str  # "" for core
    resource: str
    verb: str
    scope: Literal["cluster", "plugin-namespace"]
    named: Literal["plugin-daemonset", "plugin-configmap"] | None = None
    writes: bool = False


READ_CALLS: tuple[ApiCall, ...] = (
    ApiCall("", "nodes", "list", "cluster"),
    ApiCall("", "nodes", "watch", "cluster"),
    ApiCall("", "pods", "list", "cluster"),
    ApiCall("", "pods", "watch", "cluster"),
    # list/watch with fieldSelector metadata.name=<name>, which RBAC resourceNames allow.
    ApiCall("apps", "daemonsets", "list", "plugin-namespace", "plugin-daemonset"),
    ApiCall("apps", "daemonsets", "watch", "plugin-namespace", "plugin-daemonset"),
    ApiCall("apps", "daemonsets", "get", "plugin-namespace", "plugin-daemonset"),
    ApiCall("", "configmaps", "list", "plugin-namespace", "plugin-configmap"),
    ApiCall("", "configmaps", "watch", "plugin-namespace", "plugin-configmap"),
    ApiCall("", "configmaps", "get", "plugin-namespace", "plugin-configmap"),
    # Dynamic Resource Allocation (resource.k8s.io/v1); a cluster without it answers 404.
    ApiCall("resource.k8s.io", "deviceclasses", "list", "cluster"),
    ApiCall("resource.k8s.io", "deviceclasses", "watch", "cluster"),
    ApiCall("resource.k8s.io", "resourceslices", "list", "cluster"),
    ApiCall("resource.k8s.io", "resourceslices", "watch", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaims", "list", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaims", "watch", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaimtemplates", "list", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaimtemplates", "watch", "cluster"),
)

WRITE_CALLS: tuple[ApiCall, ...] = (
    ApiCall("apps", "daemonsets", "update", "plugin-namespace", "plugin-daemonset", writes=True),
    ApiCall("apps", "daemonsets", "patch", "plugin-namespace", "plugin-daemonset", writes=True),
    ApiCall("", "configmaps", "create", "plugin-namespace", writes=True),
    ApiCall("", "configmaps", "update", "plugin-namespace", "plugin-configmap", writes=True),
    ApiCall("", "configmaps", "patch", "plugin-namespace", "plugin-configmap", writes=True),
    ApiCall("", "configmaps", "delete", "plugin-namespace", "plugin-configmap", writes=True),
    ApiCall("", "events", "create", "plugin-namespace", writes=True),
    ApiCall("", "users", "impersonate", "cluster", writes=True),
    ApiCall("", "groups", "impersonate", "cluster", writes=True),
)
