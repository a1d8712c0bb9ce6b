"""The API server's validation of a written object: names, labels, pod specs, events."""

from __future__ import annotations

import re
from typing import Any

from app.simulator.apiserver.errors import bad_request, invalid
from app.simulator.apiserver.quantities import validate_container_resources
from app.simulator.apiserver.resources import DAEMONSET, POD, ResourceType
from app.simulator.apiserver.store import JsonObject

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def validate(resource: ResourceType, obj: JsonObject) -> None:
    """Refuse an object the API server would refuse (422), as it does on create and update."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    if len(name) > 253 or not _NAME.match(name):
        raise invalid(
            resource.kind,
            name,
            "metadata.name",
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character",
        )
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values is None:
            continue
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise invalid(resource.kind, name, f"metadata.{field}", "values must be strings")
    for key, value in (meta.get("labels") or {}).items():
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise invalid(resource.kind, name, f"metadata.labels[{key}]", "invalid label value")
    if resource is POD:
        _validate_pod_spec(resource.kind, name, "spec", obj.get("spec"))
    elif resource is DAEMONSET:
        spec = obj.get("spec") or {}
        template = spec.get("template") or {}
        selector = (spec.get("selector") or {}).get("matchLabels") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector:
            raise invalid(resource.kind, name, "spec.selector", "Required value")
        if any(labels.get(k) != v for k, v in selector.items()):
            raise invalid(
                resource.kind,
                name,
                "spec.template.metadata.labels",
                "`selector` does not match template `labels`",
            )
        _validate_pod_spec(resource.kind, name, "spec.template.spec", template.get("spec"))
    elif resource.kind == "Event":
        _validate_event_namespace(name, obj)
    elif resource.kind == "ConfigMap":
        data = obj.get("data") or {}
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise invalid(resource.kind, name, "data", "values must be strings")


def _validate_event_namespace(name: str, event: JsonObject) -> None:
    """An Event lives in its object's namespace; one about a cluster-scoped object in default.

    (kube-apiserver's rule for events.v1 without eventTime; kube-system is accepted too
    when eventTime is set.)
    """
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    involved = str((event.get("involvedObject") or {}).get("namespace") or "")
    allowed = {"", "default"} | ({"kube-system"} if event.get("eventTime") else set())
    if (involved and namespace != involved) or (not involved and namespace not in allowed):
        raise invalid("Event", name, "involvedObject.namespace", "does not match event.namespace")


def _validate_pod_spec(kind: str, name: str, path: str, spec: Any) -> None:
    containers = (spec or {}).get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        raise invalid(kind, name, f"{path}.containers", "Required value")
    for i, container in enumerate(containers):
        if not isinstance(container, dict) or not container.get("name"):
            raise invalid(kind, name, f"{path}.containers[{i}].name", "Required value")
        if not container.get("image"):
            raise invalid(kind, name, f"{path}.containers[{i}].image", "Required value")
        validate_container_resources(kind, name, f"{path}.containers[{i}]", container)
    for i, container in enumerate(spec.get("initContainers") or []):
        validate_container_resources(kind, name, f"{path}.initContainers[{i}]", container)


def check_type(resource: ResourceType, body: Any) -> JsonObject:
    """The body as an object of this kind (400 for another kind, version or shape)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    kind = body.get("kind")
    if kind not in (None, resource.kind):
        raise bad_request(f"the kind of the body ({kind}) does not match {resource.kind}")
    api_version = body.get("apiVersion")
    if api_version not in (None, resource.api_version):
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({resource.api_version})"
        )
    if not isinstance(body.get("metadata", {}), dict):
        raise bad_request("metadata must be an object")
    return body
