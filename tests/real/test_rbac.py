"""Least privilege, judged by the real RBAC authorizer: the chart grants what the code declares.

Each call in `app/kube/permissions.py` is asked of the API server as the chart's dashboard
ServiceAccount (SubjectAccessReview): every declared call must be allowed (a verb removed
from the chart fails `test_chart_allows_every_declared_call`, naming it), and every other
verb on the kinds the dashboard touches must be refused
(`test_chart_allows_nothing_undeclared`). The dashboard itself, running with that
account's token, reads the whole cluster without a single refusal.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.kube.permissions import AGENT_AUTH_CALLS, READ_CALLS, WRITE_CALLS, ApiCall
from tests.real.conftest import DASHBOARD_ACCOUNT, RealWorld
from tests.real.controlplane import ControlPlane
from tests.real.world import NAMESPACE

PLUGIN_NAMESPACE = "kube-system"
CONFIG_NAMESPACE = "nvidia-device-plugin"  # the demo's second install (plugin.configNamespaces)
SCOPES = {
    "cluster": None,
    "plugin-namespace": PLUGIN_NAMESPACE,
    "config-namespaces": CONFIG_NAMESPACE,
    "history-namespace": NAMESPACE,
}
NAMES = {
    "plugin-daemonset": "nvidia-device-plugin-daemonset",
    "plugin-configmap": "nvidia-device-plugin-config",
}
USER = f"system:serviceaccount:{NAMESPACE}:{DASHBOARD_ACCOUNT}"
GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"]
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
KINDS = (
    ("", "nodes"),
    ("", "pods"),
    ("", "configmaps"),
    ("", "events"),
    ("", "secrets"),
    ("", "serviceaccounts"),
    ("", "namespaces"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "resourceslices"),
    ("resource.k8s.io", "resourceclaims"),
    ("rbac.authorization.k8s.io", "clusterroles"),
)
# Impersonation is granted only with proxy sign-in (off in this install), as tests/chart checks.
DECLARED = tuple(
    c for c in (*READ_CALLS, *AGENT_AUTH_CALLS, *WRITE_CALLS) if c.verb != "impersonate"
)


def allowed(
    plane: ControlPlane,
    *,
    group: str,
    resource: str,
    verb: str,
    namespace: str | None,
    name: str | None = None,
) -> bool:
    attributes: dict[str, Any] = {"group": group, "resource": resource, "verb": verb}
    if namespace:
        attributes["namespace"] = namespace
    if name:
        attributes["name"] = name
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": USER, "groups": GROUPS, "resourceAttributes": attributes},
    }
    with plane.http() as http:
        answer = http.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=body)
    answer.raise_for_status()
    return bool(answer.json()["status"].get("allowed"))


def _asked(call: ApiCall) -> dict[str, Any]:
    if call.scope not in SCOPES:
        raise AssertionError(f"scope {call.scope!r} of {call} has no namespace in this test")
    return {
        "group": call.api_group,
        "resource": call.resource,
        "verb": call.verb,
        "namespace": SCOPES[call.scope],
        "name": NAMES.get(call.named or ""),
    }


def _shown(call: ApiCall) -> str:
    where = f"{call.scope} {call.named}" if call.named else call.scope
    return f"{call.verb} {call.resource}.{call.api_group or 'core'} ({where})"


def test_chart_allows_every_declared_call(world: RealWorld) -> None:
    refused = [_shown(c) for c in DECLARED if not allowed(world.plane, **_asked(c))]

    assert refused == [], "the chart's RBAC refuses calls the code makes"


def _declared(group: str, resource: str, verb: str, scope: str) -> bool:
    """Declared for any object of that scope (a cluster-wide grant covers every namespace)."""
    return any(
        c.api_group == group
        and c.resource == resource
        and c.verb == verb
        and c.named is None
        and (c.scope == scope or c.scope == "cluster")
        for c in DECLARED
    )


@pytest.mark.parametrize("scope", ["cluster", "plugin-namespace", "default"])
def test_chart_allows_nothing_undeclared(world: RealWorld, scope: str) -> None:
    namespace = {"cluster": None, "plugin-namespace": PLUGIN_NAMESPACE}.get(scope, "default")
    excess = [
        f"{verb} {resource}.{group or 'core'}"
        for group, resource in KINDS
        for verb in VERBS
        if allowed(world.plane, group=group, resource=resource, verb=verb, namespace=namespace)
        and not _declared(group, resource, verb, scope)
    ]

    assert excess == [], f"the chart grants more than the code needs in {scope}"


def test_dashboard_with_the_chart_account_reads_everything_without_refusal(
    world: RealWorld,
) -> None:
    ready = world.get("/readyz").json()
    summary = world.get("/api/v1/summary").json()

    assert ready["status"] == "ok", ready
    assert summary["stale"] is False
    assert " is forbidden: " not in world.dashboard.log()  # the API server's refusal
