"""`/openapi/v3` and `/openapi/v2`: what kubectl reads before apply, create -f and edit.

kubectl 1.35 validates by asking the server to (`fieldValidation=Strict`) when the
server's OpenAPI v3 document shows that parameter on the PATCH operation of the kind;
without an OpenAPI document it stops with "failed to download openapi". So each served
group-version gets a document with its paths (every verb, tagged with the
`x-kubernetes-group-version-kind` extension) and a schema per kind. The schemas describe
the object's envelope (apiVersion, kind, metadata, and the kind's top-level fields); the
server checks the top-level fields strictly and the rest as the simulator's own rules do.
kubectl's strategic-merge patches for built-in kinds come from its compiled-in types.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from app.simulator.apiserver.errors import ApiError, bad_request
from app.simulator.apiserver.resources import (
    RESOURCES,
    SERVER_VERSION,
    ResourceType,
    group_versions,
)

# Top-level fields of each served kind besides apiVersion, kind and metadata (facts from
# the Kubernetes API reference); an unknown top-level field is refused under Strict.
TOP_LEVEL_FIELDS: dict[str, tuple[str, ...]] = {
    "ConfigMap": ("data", "binaryData", "immutable"),
    "Secret": ("data", "stringData", "type", "immutable"),
    "Event": (
        "action",
        "count",
        "eventTime",
        "firstTimestamp",
        "involvedObject",
        "lastTimestamp",
        "message",
        "reason",
        "related",
        "reportingComponent",
        "reportingInstance",
        "series",
        "source",
        "type",
    ),
    "ServiceAccount": ("secrets", "imagePullSecrets", "automountServiceAccountToken"),
    "Role": ("rules",),
    "ClusterRole": ("rules", "aggregationRule"),
    "RoleBinding": ("subjects", "roleRef"),
    "ClusterRoleBinding": ("subjects", "roleRef"),
    "RuntimeClass": ("handler", "overhead", "scheduling"),
}
SPEC_AND_STATUS = ("spec", "status")
FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "schema": {"type": "string", "enum": ["Ignore", "Strict", "Warn"]},
}
DRY_RUN = {"name": "dryRun", "in": "query", "schema": {"type": "string"}}


def allowed_fields(kind: str) -> frozenset[str]:
    """The top-level fields the kind may carry."""
    extra = TOP_LEVEL_FIELDS.get(kind, SPEC_AND_STATUS)
    return frozenset(("apiVersion", "kind", "metadata", *extra))


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _schema_name(resource: ResourceType) -> str:
    group = resource.group.split(".")[0] if resource.group else "core"
    return f"io.k8s.api.{group}.{resource.version}.{resource.kind}"


def _gvk(resource: ResourceType) -> dict[str, str]:
    return {"group": resource.group, "version": resource.version, "kind": resource.kind}


def _kind_schema(resource: ResourceType) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }
    for field in sorted(allowed_fields(resource.kind) - set(properties)):
        properties[field] = {"x-kubernetes-preserve-unknown-fields": True}
    return {
        "type": "object",
        "properties": properties,
        "x-kubernetes-group-version-kind": [_gvk(resource)],
    }


def _operation(resource: ResourceType, action: str, *, body: bool) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{_schema_name(resource)}"}
    operation: dict[str, Any] = {
        "operationId": f"{action}{resource.kind}",
        "parameters": [DRY_RUN, FIELD_VALIDATION] if body else [],
        "responses": {"200": {"content": {"application/json": {"schema": ref}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource),
    }
    if body:
        types = ["application/json"]
        if action == "patch":
            types = [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        operation["requestBody"] = {"content": {t: {"schema": ref} for t in types}}
    return operation


def _paths(resource: ResourceType) -> dict[str, Any]:
    base = "/" + _gv_path(resource.group, resource.version)
    scope = f"{base}/namespaces/{{namespace}}" if resource.namespaced else base
    collection = f"{scope}/{resource.plural}"
    return {
        collection: {
            "get": _operation(resource, "list", body=False),
            "post": _operation(resource, "post", body=True),
        },
        f"{collection}/{{name}}": {
            "get": _operation(resource, "get", body=False),
            "put": _operation(resource, "put", body=True),
            "patch": _operation(resource, "patch", body=True),
            "delete": _operation(resource, "delete", body=False),
        },
    }


def group_version_document(group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version, or None if not served."""
    if (group, version) not in group_versions():
        return None
    served = [r for r in RESOURCES if (r.group, r.version) == (group, version)]
    paths: dict[str, Any] = {}
    for resource in served:
        paths.update(_paths(resource))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (simulated)", "version": SERVER_VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": {_schema_name(r): _kind_schema(r) for r in served}},
    }


def _hash(document: dict[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True).encode()
    return hashlib.sha512(text).hexdigest()[:128].upper()


def root_document() -> dict[str, Any]:
    """`GET /openapi/v3`: where each group-version's document is, with its content hash."""
    paths: dict[str, Any] = {}
    for group, version in group_versions():
        document = group_version_document(group, version)
        assert document is not None
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(document)}"}
    return {"paths": paths}


def swagger_document() -> dict[str, Any]:
    """`GET /openapi/v2` (JSON): every served kind's definition, for clients that read v2."""
    definitions: dict[str, Any] = {}
    for resource in RESOURCES:
        schema = _kind_schema(resource)
        for prop in schema["properties"].values():
            prop.pop("x-kubernetes-preserve-unknown-fields", None)
        definitions[_schema_name(resource)] = schema
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes (simulated)", "version": SERVER_VERSION["gitVersion"]},
        "paths": {},
        "definitions": definitions,
    }


def document_for(path: str, accept: str) -> dict[str, Any]:
    """The document a `/openapi/...` path names; v2 only as JSON (406 for protobuf)."""
    document: dict[str, Any] | None = None
    if path == "/openapi/v3":
        document = root_document()
    elif path.startswith("/openapi/v3/"):
        parts = path.removeprefix("/openapi/v3/").split("/")
        if parts[:1] == ["api"] and len(parts) == 2:
            document = group_version_document("", parts[1])
        elif parts[:1] == ["apis"] and len(parts) == 3:
            document = group_version_document(parts[1], parts[2])
    elif path == "/openapi/v2":
        if "protobuf" in accept and "json" not in accept:
            raise ApiError("NotAcceptable", "only application/json is served for /openapi/v2")
        document = swagger_document()
    if document is None:
        raise ApiError("NotFound", "the server could not find the requested resource")
    return document


def check_fields(kind: str, body: Any) -> None:
    """`fieldValidation=Strict`: an unknown top-level field is refused, as kubectl expects."""
    if not isinstance(body, dict):
        return
    fields = {f for f in body if not str(f).startswith("$")}  # patch directives
    unknown = sorted(fields - allowed_fields(kind))
    if unknown:
        raise bad_request(
            "strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in unknown)
        )
