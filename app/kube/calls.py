"""The writers' calls: raw JSON answers with a timeout, our errors, reads that may find nothing.

Every call is made with `_preload_content=False` (plain dicts in and out, no client
models) and a timeout; a dry run adds `dryRun=All`. The DaemonSet replace retries a 409
that only the controller's status writes caused (app.kube.status_races).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from app.domain.cluster import Manifest
from app.errors import NotFoundError
from app.kube.client import call_json
from app.kube.status_races import replace_despite_status_writes

TIMEOUT_S = 15


def raw(dry_run: bool = False) -> dict[str, Any]:
    """The keyword arguments of every call: raw answer, timeout, and dryRun=All when asked."""
    kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": TIMEOUT_S}
    if dry_run:
        kwargs["dry_run"] = "All"
    return kwargs


def delete_options(preconditions: client.V1Preconditions, *, dry_run: bool) -> Any:
    """DeleteOptions with the dry run in the body too.

    kube-apiserver reads a DELETE's options from its body when there is one and then ignores
    the query's `dryRun`: a preview's delete with preconditions in the body and `dryRun`
    only in the query deletes for real (found on the real tier).
    """
    return client.V1DeleteOptions(preconditions=preconditions, dry_run=["All"] if dry_run else None)


def optional_json(call: Callable[[], Any], *, action: str) -> Manifest | None:
    """The JSON answer of `call`; None when the object is not found."""
    try:
        return call_json(call, action=action)
    except NotFoundError:
        return None


class NamespaceCalls:
    """Reads of Nodes, DaemonSets and ConfigMaps of one namespace; the DaemonSet replace."""

    def __init__(self, api_client: client.ApiClient, namespace: str) -> None:
        self.apps = client.AppsV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.namespace = namespace

    def read_node(self, name: str) -> Manifest | None:
        return optional_json(
            lambda: self.core.read_node(name, **raw()), action=f"reading node {name}"
        )

    def read_daemonset(self, name: str) -> Manifest | None:
        ns = self.namespace
        return optional_json(
            lambda: self.apps.read_namespaced_daemon_set(name, ns, **raw()),
            action=f"reading DaemonSet {ns}/{name}",
        )

    def read_configmap(self, name: str) -> Manifest | None:
        ns = self.namespace
        return optional_json(
            lambda: self.core.read_namespaced_config_map(name, ns, **raw()),
            action=f"reading ConfigMap {ns}/{name}",
        )

    def replace_daemonset(
        self, name: str, body: Manifest, *, seen: Manifest, dry_run: bool, action: str
    ) -> Manifest | None:
        """Replace the DaemonSet `name`, retrying a 409 its status writes alone caused."""
        kwargs = raw(dry_run)

        def replace(fresh: Any) -> Manifest | None:
            return call_json(
                lambda: self.apps.replace_namespaced_daemon_set(
                    name, self.namespace, fresh, **kwargs
                ),
                action=action,
            )

        return replace_despite_status_writes(
            replace, lambda: self.read_daemonset(name), body, seen=seen
        )
