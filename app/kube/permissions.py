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
    # config-namespaces: each of GEO_MLOPS_PLUGIN_CONFIG_NAMESPACES (chart plugin.configNamespaces)
    # history-namespace: GEO_MLOPS_CHANGE_HISTORY_NAMESPACE (the chart's release namespace)
    scope: Literal["cluster", "plugin-namespace", "config-namespaces", "history-namespace"]
    named: Literal["plugin-daemonset", "plugin-configmap"] | None = None
    writes: bool = False


READ_CALLS: tuple[ApiCall, ...] = (
    ApiCall("", "nodes", "list", "cluster"),
    ApiCall("", "nodes", "watch", "cluster"),
    ApiCall("", "pods", "list", "cluster"),
    ApiCall("", "pods", "watch", "cluster"),
    # Every DaemonSet, cluster-wide: plugin installs are found by what they run, wherever
    # they are (Helm release namespace, GPU Operator namespace, one per node group).
    ApiCall("apps", "daemonsets", "list", "cluster"),
    ApiCall("apps", "daemonsets", "watch", "cluster"),
    ApiCall("apps", "daemonsets", "get", "plugin-namespace", "plugin-daemonset"),
    # ConfigMaps of the plugin namespace, whatever their names: a DaemonSet may mount any.
    ApiCall("", "configmaps", "list", "plugin-namespace"),
    ApiCall("", "configmaps", "watch", "plugin-namespace"),
    ApiCall("", "configmaps", "get", "plugin-namespace"),
    # ... and of the other namespaces plugin installs run in, when the admin lists them.
    ApiCall("", "configmaps", "list", "config-namespaces"),
    ApiCall("", "configmaps", "watch", "config-namespaces"),
    # Dynamic Resource Allocation (resource.k8s.io/v1); a cluster without it answers 404.
    ApiCall("resource.k8s.io", "deviceclasses", "list", "cluster"),
    ApiCall("resource.k8s.io", "deviceclasses", "watch", "cluster"),
    ApiCall("resource.k8s.io", "resourceslices", "list", "cluster"),
    ApiCall("resource.k8s.io", "resourceslices", "watch", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaims", "list", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaims", "watch", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaimtemplates", "list", "cluster"),
    ApiCall("resource.k8s.io", "resourceclaimtemplates", "watch", "cluster"),
    # Per-node GPU splits: a node's own DaemonSet (any name), the node and its labels.
    ApiCall("apps", "daemonsets", "get", "plugin-namespace"),
    ApiCall("", "nodes", "get", "cluster"),
    # The change history (app.kube.history): ConfigMaps labelled gpu-slots.io/change-record
    # in the dashboard's namespace, listed directly (no watch) and read by name. RBAC cannot
    # grant by label: the code lists by label and trusts only labelled records.
    ApiCall("", "configmaps", "list", "history-namespace"),
    ApiCall("", "configmaps", "get", "history-namespace"),
)

# Agents bound to their node (app.kube.tokenreview): the review of each agent's projected
# token, and the token's pod where the review names no node (Kubernetes before 1.30).
AGENT_AUTH_CALLS: tuple[ApiCall, ...] = (
    ApiCall("authentication.k8s.io", "tokenreviews", "create", "cluster"),
    ApiCall("", "pods", "get", "cluster"),
)

WRITE_CALLS: tuple[ApiCall, ...] = (
    ApiCall("apps", "daemonsets", "update", "plugin-namespace", "plugin-daemonset", writes=True),
    ApiCall("apps", "daemonsets", "patch", "plugin-namespace", "plugin-daemonset", writes=True),
    ApiCall("", "configmaps", "create", "plugin-namespace", writes=True),
    ApiCall("", "configmaps", "update", "plugin-namespace", "plugin-configmap", writes=True),
    ApiCall("", "configmaps", "patch", "plugin-namespace", "plugin-configmap", writes=True),
    ApiCall("", "configmaps", "delete", "plugin-namespace", "plugin-configmap", writes=True),
    # Events announce each change (they expire; the history is the ConfigMaps below).
    ApiCall("", "events", "create", "plugin-namespace", writes=True),
    # One ConfigMap per change, and the oldest deleted beyond GEO_MLOPS_CHANGE_HISTORY_KEEP.
    ApiCall("", "configmaps", "create", "history-namespace", writes=True),
    ApiCall("", "configmaps", "delete", "history-namespace", writes=True),
    # A mode change's record says when the maxUnavailable it raised was put back.
    ApiCall("", "configmaps", "update", "history-namespace", writes=True),
    # Per-node GPU splits: own DaemonSets and ConfigMaps are named after their node.
    ApiCall("apps", "daemonsets", "create", "plugin-namespace", writes=True),
    ApiCall("apps", "daemonsets", "update", "plugin-namespace", writes=True),
    ApiCall("apps", "daemonsets", "delete", "plugin-namespace", writes=True),
    ApiCall("", "configmaps", "update", "plugin-namespace", writes=True),
    ApiCall("", "configmaps", "delete", "plugin-namespace", writes=True),
    ApiCall("", "nodes", "patch", "cluster", writes=True),
    ApiCall("", "users", "impersonate", "cluster", writes=True),
    ApiCall("", "groups", "impersonate", "cluster", writes=True),
)
