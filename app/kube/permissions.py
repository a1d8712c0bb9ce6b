"""Every Kubernetes API call GPU Slots makes, declared once.

The Helm chart's RBAC is tested against this list (tests/chart), and app/kube only makes
calls listed here, so the chart grants exactly what the code needs and nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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


def _verbs(
    api_group: str,
    resource: str,
    scope: Literal["cluster", "plugin-namespace", "config-namespaces", "history-namespace"],
    *verbs: str,
    named: Literal["plugin-daemonset", "plugin-configmap"] | None = None,
) -> tuple[ApiCall, ...]:
    """The same resource, scope and names under each verb."""
    return tuple(ApiCall(api_group, resource, verb, scope, named) for verb in verbs)


READ_CALLS: tuple[ApiCall, ...] = (
    *_verbs("", "nodes", "cluster", "list", "watch"),
    *_verbs("", "pods", "cluster", "list", "watch"),
    # ResourceQuotas: the fit check says when a namespace's GPU quota is used up.
    *_verbs("", "resourcequotas", "cluster", "list", "watch"),
    # Every DaemonSet, cluster-wide: plugin installs are found by what they run, wherever
    # they are (Helm release namespace, GPU Operator namespace, one per node group).
    *_verbs("apps", "daemonsets", "cluster", "list", "watch"),
    ApiCall("apps", "daemonsets", "get", "plugin-namespace", "plugin-daemonset"),
    # ConfigMaps of the plugin namespace, whatever their names: a DaemonSet may mount any.
    *_verbs("", "configmaps", "plugin-namespace", "list", "watch", "get"),
    # ... and of the other namespaces plugin installs run in, when the admin lists them.
    *_verbs("", "configmaps", "config-namespaces", "list", "watch"),
    # Dynamic Resource Allocation (resource.k8s.io/v1); a cluster without it answers 404.
    *_verbs("resource.k8s.io", "deviceclasses", "cluster", "list", "watch"),
    *_verbs("resource.k8s.io", "resourceslices", "cluster", "list", "watch"),
    *_verbs("resource.k8s.io", "resourceclaims", "cluster", "list", "watch"),
    *_verbs("resource.k8s.io", "resourceclaimtemplates", "cluster", "list", "watch"),
    # Per-node GPU splits: a node's own DaemonSet (any name), the node and its labels.
    ApiCall("apps", "daemonsets", "get", "plugin-namespace"),
    ApiCall("", "nodes", "get", "cluster"),
    # The change history (app.kube.history): ConfigMaps labelled gpu-slots.io/change-record
    # in the dashboard's namespace, listed directly (no watch) and read by name. RBAC cannot
    # grant by label: the code lists by label and trusts only labelled records.
    *_verbs("", "configmaps", "history-namespace", "list", "get"),
)

# Agents bound to their node (app.kube.tokenreview): the review of each agent's projected
# token, and the token's pod where the review names no node (Kubernetes before 1.30).
AGENT_AUTH_CALLS: tuple[ApiCall, ...] = (
    ApiCall("authentication.k8s.io", "tokenreviews", "create", "cluster"),
    ApiCall("", "pods", "get", "cluster"),
)

WRITE_CALLS: tuple[ApiCall, ...] = tuple(
    replace(call, writes=True)
    for call in (
        *_verbs(
            "apps", "daemonsets", "plugin-namespace", "update", "patch", named="plugin-daemonset"
        ),
        ApiCall("", "configmaps", "create", "plugin-namespace"),
        *_verbs(
            "",
            "configmaps",
            "plugin-namespace",
            "update",
            "patch",
            "delete",
            named="plugin-configmap",
        ),
        # Events announce each change (they expire; the history is the ConfigMaps below).
        ApiCall("", "events", "create", "plugin-namespace"),
        # One ConfigMap per change, and the oldest deleted beyond GEO_MLOPS_CHANGE_HISTORY_KEEP.
        # A mode change's record says when the maxUnavailable it raised was put back (update).
        *_verbs("", "configmaps", "history-namespace", "create", "delete", "update"),
        # Per-node GPU splits: own DaemonSets and ConfigMaps are named after their node.
        *_verbs("apps", "daemonsets", "plugin-namespace", "create", "update", "delete"),
        *_verbs("", "configmaps", "plugin-namespace", "update", "delete"),
        ApiCall("", "nodes", "patch", "cluster"),
        ApiCall("", "users", "impersonate", "cluster"),
        ApiCall("", "groups", "impersonate", "cluster"),
    )
)
