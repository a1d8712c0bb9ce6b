"""The API documents itself: every field described (on its model), security schemes for the
admin token and the session cookie, schema names without module paths, examples that match
their models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.domain.report import AgentReport
from app.web.app import create_app
from app.web.http.openapi_examples import REQUEST_EXAMPLES, RESPONSE_EXAMPLES
from app.web.routes.mode_api import PluginConfigIn
from app.web.routes.split_api import GpuSplitIn
from app.web.views.schemas import (
    FindingsOut,
    NodeDraDevicesOut,
    NodeOut,
    NodesOut,
    ReportAcceptedOut,
    SummaryOut,
)
from tests.conftest import stack_settings
from tests.web.fakes import FakeSource

EXAMPLE_MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("GET", "/api/v1/summary"): SummaryOut,
    ("GET", "/api/v1/nodes/{name}"): NodeOut,
    ("GET", "/api/v1/nodes"): NodesOut,
    ("GET", "/api/v1/findings"): FindingsOut,
    ("GET", "/api/v1/nodes/{name}/dra-devices"): NodeDraDevicesOut,
    ("POST", "/api/v1/agent/reports"): ReportAcceptedOut,
}
REQUEST_MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("POST", "/api/v1/agent/reports"): AgentReport,
    ("PUT", "/api/v1/plugin/config"): PluginConfigIn,
    ("PUT", "/api/v1/nodes/{name}/gpu-split"): GpuSplitIn,
}


@pytest.fixture(scope="module")
def spec() -> Iterator[dict[str, Any]]:
    app = create_app(stack_settings(), source=FakeSource(synced=False))
    with TestClient(app) as client:
        response = client.get("/openapi.json")
        response.raise_for_status()
        yield response.json()


def _schemas(spec: dict[str, Any]) -> dict[str, Any]:
    schemas: dict[str, Any] = spec["components"]["schemas"]
    return schemas


def test_openapi_every_field_has_a_description(spec: dict[str, Any]) -> None:
    missing = [
        f"{name}.{field}"
        for name, schema in _schemas(spec).items()
        for field, body in (schema.get("properties") or {}).items()
        if not (body.get("description") or "").strip()
    ]
    assert missing == [], f"{len(missing)} fields without a description: {missing}"


def test_openapi_schema_names_carry_no_module_path(spec: dict[str, Any]) -> None:
    names = list(_schemas(spec))
    assert [n for n in names if "__" in n or "." in n] == []
    assert {"ModeRollbackIn", "SplitRollbackIn"} <= set(names)
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    assert {ref.removeprefix("#/components/schemas/") for ref in refs} <= set(names)


def test_openapi_security_schemes_for_admin_token_and_session_cookie(spec: dict[str, Any]) -> None:
    schemes = spec["components"]["securitySchemes"]
    assert (schemes["adminBearer"]["type"], schemes["adminBearer"]["scheme"]) == ("http", "bearer")
    cookie = schemes["sessionCookie"]
    assert (cookie["type"], cookie["in"], cookie["name"]) == (
        "apiKey",
        "cookie",
        "gpu_slots_session",
    )
    paths = spec["paths"]
    read = paths["/api/v1/summary"]["get"]["security"]
    assert {} in read and {"adminBearer": []} in read and {"sessionCookie": []} in read
    write = paths["/api/v1/plugin/config"]["put"]["security"]
    assert write == [{"adminBearer": []}, {"sessionCookie": []}]
    assert paths["/api/v1/agent/reports"]["post"]["security"] == [{"agentBearer": []}]
    assert paths["/healthz"]["get"]["security"] == []
    for path, operations in paths.items():
        for method, operation in operations.items():
            assert "security" in operation, (method, path)


@pytest.mark.parametrize("key", sorted(EXAMPLE_MODELS), ids=" ".join)
def test_openapi_response_examples_match_their_models(
    spec: dict[str, Any], key: tuple[str, str]
) -> None:
    method, path = key
    content = spec["paths"][path][method.lower()]["responses"]["200"]["content"]
    example = content["application/json"]["example"]
    assert example == RESPONSE_EXAMPLES[key]
    EXAMPLE_MODELS[key].model_validate(example)


@pytest.mark.parametrize("key", sorted(REQUEST_MODELS), ids=" ".join)
def test_openapi_request_examples_match_their_models(
    spec: dict[str, Any], key: tuple[str, str]
) -> None:
    method, path = key
    body = spec["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]
    assert body["example"] == REQUEST_EXAMPLES[key]
    REQUEST_MODELS[key].model_validate(body["example"])
