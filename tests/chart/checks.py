"""Checks on rendered manifests that the Kubernetes OpenAPI schemas do not make."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
from kubernetes_validate.utils import latest_version

from tests.chart.monitoring_schemas import monitoring_errors

# k3s publishes releases for the Kubernetes minors upstream still supports (the newest
# three); the chart is validated against the oldest and the newest of those that
# kubernetes-validate knows.
NEWEST_KUBE_VERSION = ".".join(latest_version().split(".")[:2])
OLDEST_KUBE_VERSION = f"1.{int(NEWEST_KUBE_VERSION.split('.')[1]) - 2}"
KUBE_VERSIONS = (OLDEST_KUBE_VERSION, NEWEST_KUBE_VERSION)
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace"}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}
# Kinds whose names must be DNS-1123 labels (they become DNS names or label values).
LABEL_NAMED = {"Service", "Namespace"}


def schema_errors(obj: dict[str, Any], kube_version: str) -> list[str]:
    """The first schema error of the object, with its path, or nothing."""
    if obj["apiVersion"].startswith("monitoring.coreos.com/"):
        return monitoring_errors(obj)  # the Prometheus Operator's CRDs
    try:
        kubernetes_validate.validate(obj, kube_version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = "/".join(str(p) for p in exc.absolute_path)
        return [f"{kube_version} {obj['kind']}/{obj['metadata']['name']}: {exc.message} at /{path}"]
    return []


def name_errors(obj: dict[str, Any]) -> list[str]:
    """Object names that the API server would refuse, and missing namespaces."""
    errors: list[str] = []
    kind, meta = obj["kind"], obj["metadata"]
    name = meta["name"]
    pattern, limit = (DNS1123_LABEL, 63) if kind in LABEL_NAMED else (DNS1123_SUBDOMAIN, 253)
    if not pattern.match(name) or len(name) > limit:
        errors.append(f"{kind} name {name!r} is not a valid DNS-1123 name")
    if kind in WORKLOADS and len(name) > 63:
        errors.append(f"{kind} name {name!r} is longer than a label value may be")
    if kind not in CLUSTER_SCOPED and not meta.get("namespace"):
        errors.append(f"{kind}/{name} has no namespace")
    if kind in CLUSTER_SCOPED and meta.get("namespace"):
        errors.append(f"{kind}/{name} is cluster-scoped but names a namespace")
    for key, value in (meta.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63:
            errors.append(f"{kind}/{name} label {key}={value!r} is not a valid label value")
    return errors


def selector_errors(obj: dict[str, Any]) -> list[str]:
    """A workload whose selector does not match its own pod template is refused."""
    if obj["kind"] not in WORKLOADS:
        return []
    selector = obj["spec"]["selector"].get("matchLabels", {})
    labels = obj["spec"]["template"]["metadata"].get("labels", {})
    missing = {k: v for k, v in selector.items() if labels.get(k) != v}
    return [f"{obj['kind']}/{obj['metadata']['name']}: selector {missing} not in template"] * bool(
        missing
    )


def service_selects(service: dict[str, Any], workload: dict[str, Any]) -> bool:
    """Whether the Service's selector matches the workload's pod labels."""
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in service["spec"]["selector"].items())


def all_errors(objects: list[dict[str, Any]], kube_version: str) -> list[str]:
    errors: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for obj in objects:
        errors += schema_errors(obj, kube_version) + name_errors(obj) + selector_errors(obj)
        key = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if key in seen:
            errors.append(f"duplicate object {key}")
        seen.add(key)
    return errors
