"""What /openapi.json says beyond FastAPI's defaults (each field's description is its
model's own): how each operation authenticates (securitySchemes, so /docs has an
Authorize button), schema names without module paths, and examples on the main endpoints."""

from __future__ import annotations

import re
from typing import Any

from app.web.auth.state import CSRF_HEADER, SESSION_COOKIE
from app.web.http.openapi_examples import REQUEST_EXAMPLES, RESPONSE_EXAMPLES

# FastAPI names two models of one name by module path; they are named by their router's
# resource instead (split_api's RollbackIn: SplitRollbackIn).
_MODULE_PATH = re.compile(r"^(?:[a-z0-9_]+__)+(?P<module>[a-z0-9_]+)__(?P<name>\w+)$")

SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "adminBearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "The admin token (GEO_MLOPS_ADMIN_TOKEN; the chart keeps it in its admin "
        "Secret). Needed for every write, and for reads when GEO_MLOPS_PUBLIC_READS is off.",
    },
    "sessionCookie": {
        "type": "apiKey",
        "in": "cookie",
        "name": SESSION_COOKIE,
        "description": "The session of an admin signed in at /login. A write with it also "
        f"needs the {CSRF_HEADER} header (the pages send it).",
    },
    "agentBearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A node agent's token: its projected ServiceAccount token (checked "
        "with a TokenReview) or its per-node token (`gpu-slots node-token NODE`).",
    },
    "metricsBearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "GEO_MLOPS_METRICS_TOKEN, when set; otherwise /metrics follows the "
        "rule of reads.",
    },
}
Requirements = list[dict[str, list[str]]]
_READ: Requirements = [{}, {"adminBearer": []}, {"sessionCookie": []}]  # {}: public reads
_WRITE: Requirements = [{"adminBearer": []}, {"sessionCookie": []}]
_BY_PATH: dict[str, Requirements] = {
    "/healthz": [],
    "/readyz": [],
    "/metrics": [{}, {"metricsBearer": []}],
    "/api/v1/agent/reports": [{"agentBearer": []}],
    "/api/v1/fit": _READ,  # a question sent as POST: it writes nothing (issue 45)
}


def document(schema: dict[str, Any]) -> None:
    """Complete FastAPI's OpenAPI document in place."""
    components = schema.setdefault("components", {})
    _rename_module_paths(schema, components.setdefault("schemas", {}))
    components["securitySchemes"] = SECURITY_SCHEMES
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            operation["security"] = _BY_PATH.get(
                path, _READ if method in ("get", "head") else _WRITE
            )
            _add_examples(path, method, operation)


def _rename_module_paths(schema: dict[str, Any], schemas: dict[str, Any]) -> None:
    renames = {}
    for name in list(schemas):
        match = _MODULE_PATH.match(name)
        if match is None:
            continue
        module = match["module"]
        prefix = module.removesuffix("_api").title().replace("_", "")
        renames[name] = prefix + match["name"]
    for old, new in renames.items():
        schemas[new] = schemas.pop(old)
        schemas[new]["title"] = new
    if renames:
        _rewrite_refs(
            schema,
            {f"#/components/schemas/{o}": f"#/components/schemas/{n}" for o, n in renames.items()},
        )


def _rewrite_refs(node: Any, refs: dict[str, str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in refs:
            node["$ref"] = refs[ref]
        for value in node.values():
            _rewrite_refs(value, refs)
    elif isinstance(node, list):
        for value in node:
            _rewrite_refs(value, refs)


def _add_examples(path: str, method: str, operation: dict[str, Any]) -> None:
    key = (method.upper(), path)
    if key in RESPONSE_EXAMPLES:
        content = operation["responses"]["200"].setdefault("content", {})
        content.setdefault("application/json", {})["example"] = RESPONSE_EXAMPLES[key]
    if key in REQUEST_EXAMPLES:
        body = operation.setdefault("requestBody", {}).setdefault("content", {})
        body.setdefault("application/json", {})["example"] = REQUEST_EXAMPLES[key]
