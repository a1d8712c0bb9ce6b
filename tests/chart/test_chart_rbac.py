"""The chart's RBAC grants exactly the API calls app/kube/permissions.py declares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from app.kube.permissions import AGENT_AUTH_CALLS, READ_CALLS, WRITE_CALLS, ApiCall
from tests.chart.helm import Rendered, render

READ_VERBS = {"get", "list", "watch"}
PLUGIN = {
    "daemonSetName": "nvdp-nvidia-device-plugin",
    "namespace": "nvidia-device-plugin",
    "configMapName": "nvdp-config",
}


@dataclass(frozen=True)
class Grant:
    """One verb on one resource, granted cluster-wide or in one namespace, maybe by name."""

    api_group: str
    resource: str
    verb: str
    namespace: str | None  # None: cluster-wide
    names: frozenset[str] | None  # None: any name


def grants_to(rendered: Rendered, account: str, account_namespace: str) -> list[Grant]:
    """Every grant that reaches the ServiceAccount through the rendered bindings."""
    roles = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in rendered.objects
        if o["kind"] in ("Role", "ClusterRole")
    }
    grants: list[Grant] = []
    for binding in rendered.objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = binding.get("subjects", [])
        if not any(
            s["kind"] == "ServiceAccount"
            and s["name"] == account
            and s["namespace"] == account_namespace
            for s in subjects
        ):
            continue
        namespace = binding["metadata"].get("namespace")  # None for a ClusterRoleBinding
        ref = binding["roleRef"]
        role = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            names = frozenset(rule["resourceNames"]) if rule.get("resourceNames") else None
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants.append(Grant(group, resource, verb, namespace, names))
    return grants


def _call_names(call: ApiCall, values: dict[str, Any]) -> frozenset[str] | None:
    if call.named == "plugin-daemonset":
        return frozenset([values["plugin"]["daemonSetName"]])
    if call.named == "plugin-configmap":
        return frozenset([values["plugin"]["configMapName"]])
    return None


def _call_namespaces(call: ApiCall, values: dict[str, Any]) -> set[str]:
    if call.scope == "history-namespace":
        return {values["historyNamespace"]}
    if call.scope == "plugin-namespace":
        return {values["plugin"]["namespace"]}
    if call.scope == "config-namespaces":
        return set(values["plugin"]["configNamespaces"]) - {values["plugin"]["namespace"]}
    return set()


def allows(grant: Grant, call: ApiCall, values: dict[str, Any]) -> bool:
    """Whether the API server would let the call through under this grant."""
    if (grant.api_group, grant.resource, grant.verb) != (call.api_group, call.resource, call.verb):
        return False
    if grant.namespace is not None and grant.namespace not in _call_namespaces(call, values):
        return False
    wanted = _call_names(call, values)
    return grant.names is None or (wanted is not None and wanted <= grant.names)


def matches_exactly(grant: Grant, call: ApiCall, values: dict[str, Any]) -> bool:
    """Whether the grant is no wider than the declared call (same scope, same names)."""
    scope_ok = (grant.namespace is None) == (call.scope == "cluster") and (
        grant.namespace is None or grant.namespace in _call_namespaces(call, values)
    )
    same_call = (grant.api_group, grant.resource, grant.verb) == (
        call.api_group,
        call.resource,
        call.verb,
    )
    return same_call and scope_ok and grant.names == _call_names(call, values)


def needed_calls(values: dict[str, Any]) -> list[ApiCall]:
    """The calls this install must allow: writes unless read-only, impersonation with proxy."""
    extra = set(values["plugin"]["configNamespaces"]) - {values["plugin"]["namespace"]}
    calls = [c for c in READ_CALLS if c.scope != "config-namespaces" or extra]
    calls += AGENT_AUTH_CALLS
    if not values["rbac"]["readOnly"]:
        calls += [
            c for c in WRITE_CALLS if c.verb != "impersonate" or values["auth"]["proxy"]["enabled"]
        ]
    return calls


PROXY = {"enabled": True, "trustedProxies": ["10.42.0.0/16"]}
CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "custom-plugin-names": {"plugin": PLUGIN},
    "config-namespaces": {"plugin": {"configNamespaces": ["gpu-operator", "kube-system"]}},
    "proxy-auth": {"auth": {"proxy": PROXY}},
    "read-only": {"rbac": {"readOnly": True}},
    "read-only-with-proxy": {"rbac": {"readOnly": True}, "auth": {"proxy": PROXY}},
}


def _context(rendered: Rendered) -> dict[str, Any]:
    """The merged values, plus the namespace the dashboard is told to keep its history in."""
    settings = rendered.find("ConfigMap", "-settings")["data"]
    namespace = settings["GEO_MLOPS_CHANGE_HISTORY_NAMESPACE"]
    return {**rendered.values, "historyNamespace": namespace}


def _dashboard_grants(rendered: Rendered) -> list[Grant]:
    account = rendered.find("ServiceAccount", "-dashboard")["metadata"]
    return grants_to(rendered, account["name"], account["namespace"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_rbac_every_needed_call_is_allowed(case: str) -> None:
    rendered = render(CASES[case])
    grants = _dashboard_grants(rendered)

    refused = [
        c
        for c in needed_calls(_context(rendered))
        if not any(allows(g, c, _context(rendered)) for g in grants)
    ]
    assert refused == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_rbac_grants_nothing_beyond_the_needed_calls(case: str) -> None:
    rendered = render(CASES[case])
    calls = needed_calls(_context(rendered))

    extra = [
        g
        for g in _dashboard_grants(rendered)
        if not any(matches_exactly(g, c, _context(rendered)) for c in calls)
    ]
    assert extra == []


@pytest.mark.parametrize("case", ["read-only", "read-only-with-proxy"])
def test_rbac_read_only_install_grants_no_write_verb(case: str) -> None:
    rendered = render(CASES[case])
    grants = _dashboard_grants(rendered)

    # Reviewing agent tokens creates TokenReviews, which write nothing in the cluster.
    writes = {
        g.verb
        for g in grants
        if (g.api_group, g.resource) != ("authentication.k8s.io", "tokenreviews")
    }
    assert writes <= READ_VERBS
    assert not [c for c in WRITE_CALLS if any(allows(g, c, _context(rendered)) for g in grants)]


def test_rbac_plugin_rights_live_in_the_plugin_namespace_only() -> None:
    rendered = render({"plugin": PLUGIN})
    namespaced = {
        g.namespace
        for g in _dashboard_grants(rendered)
        if g.namespace is not None and (g.namespace, g.resource) != ("gpu-slots", "configmaps")
    }
    cluster_wide = {
        (g.resource, g.verb) for g in _dashboard_grants(rendered) if g.namespace is None
    }

    assert namespaced == {"nvidia-device-plugin"}
    dra = ("deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates")
    assert cluster_wide == {
        ("nodes", "list"),
        ("nodes", "watch"),
        ("nodes", "get"),
        ("nodes", "patch"),  # the label that hands a split node to its own DaemonSet
        ("pods", "list"),
        ("pods", "watch"),
        ("resourcequotas", "list"),  # the fit check's quotas (issue 45)
        ("resourcequotas", "watch"),
        *((resource, verb) for resource in dra for verb in ("list", "watch")),
        ("daemonsets", "list"),
        ("daemonsets", "watch"),
        ("pods", "get"),
        ("tokenreviews", "create"),
    }


def test_rbac_config_namespaces_get_configmap_reads_only() -> None:
    rendered = render({"plugin": {"configNamespaces": ["gpu-operator"]}})
    grants = {
        (g.resource, g.verb) for g in _dashboard_grants(rendered) if g.namespace == "gpu-operator"
    }
    assert grants == {("configmaps", "list"), ("configmaps", "watch")}


def test_rbac_agent_account_is_bound_to_nothing() -> None:
    rendered = render({"auth": {"proxy": PROXY}})
    account = rendered.find("ServiceAccount", "-agent")["metadata"]

    assert grants_to(rendered, account["name"], account["namespace"]) == []


def test_rbac_off_renders_no_roles() -> None:
    kinds = set(render({"rbac": {"create": False}}).kinds())

    assert kinds.isdisjoint({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


def test_rbac_checker_flags_a_rule_wider_than_declared() -> None:
    """The checker itself must be able to fail: a wildcard name is wider than the call."""
    values = render().values
    call = next(c for c in WRITE_CALLS if c.resource == "daemonsets" and c.verb == "patch")
    wide = Grant("apps", "daemonsets", "patch", "kube-system", None)

    assert allows(wide, call, values)
    assert not matches_exactly(wide, call, values)


def test_rbac_history_lives_in_the_release_namespace_only() -> None:
    rendered = render({"plugin": PLUGIN}, namespace="platform-tools")
    history = {
        (g.resource, g.verb) for g in _dashboard_grants(rendered) if g.namespace == "platform-tools"
    }
    settings = rendered.find("ConfigMap", "-settings")["data"]

    assert history == {("configmaps", v) for v in ("get", "list", "create", "update", "delete")}
    assert settings["GEO_MLOPS_CHANGE_HISTORY_NAMESPACE"] == "platform-tools"
    assert settings["GEO_MLOPS_CHANGE_HISTORY_KEEP"] == "200"


def test_rbac_read_only_install_reads_the_history_only() -> None:
    rendered = render({"rbac": {"readOnly": True}, "dashboard": {"changeHistory": {"keep": 7}}})
    history = {
        (g.resource, g.verb) for g in _dashboard_grants(rendered) if g.namespace == "gpu-slots"
    }
    settings = rendered.find("ConfigMap", "-settings")["data"]

    assert history == {("configmaps", "get"), ("configmaps", "list")}
    assert settings["GEO_MLOPS_CHANGE_HISTORY_KEEP"] == "7"


def test_rbac_history_needs_no_event_reads() -> None:
    """Events only announce changes now: the dashboard never reads them back."""
    grants = _dashboard_grants(render())

    assert {g.verb for g in grants if g.resource == "events"} == {"create"}
