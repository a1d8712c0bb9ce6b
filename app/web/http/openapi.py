"""The API's docs: Swagger UI at /docs and /openapi.json, both behind the reader guard."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from app.domain.report import AgentReport
from app.web.http.openapi_docs import document
from app.web.views.schemas import ProblemOut

SWAGGER = "/static/vendor/swagger-ui-5.35.0"


def add_docs(app: FastAPI, reader: Any) -> None:
    @app.get("/docs", include_in_schema=False, dependencies=[reader])
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="GPU Slots API",
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
        )


def add_report_schema(app: FastAPI, reader: Any) -> None:
    """Publish AgentReport (the endpoint reads the raw body) and our 422 body shape.

    /openapi.json is served by a route of ours so that it sits behind the reader guard.
    """
    default_openapi = app.openapi

    @app.get("/openapi.json", include_in_schema=False, dependencies=[reader])
    async def openapi_json() -> JSONResponse:
        return JSONResponse(app.openapi())

    def openapi() -> dict[str, object]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = default_openapi()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        report_schema = AgentReport.model_json_schema(
            by_alias=True, ref_template="#/components/schemas/{model}"
        )
        for name, definition in report_schema.pop("$defs", {}).items():
            components[name] = definition
        components["AgentReport"] = report_schema
        components.setdefault("ProblemOut", ProblemOut.model_json_schema())
        problem = {"application/json": {"schema": {"$ref": "#/components/schemas/ProblemOut"}}}
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                invalid = operation.get("responses", {}).get("422")
                if invalid is not None:
                    invalid["content"] = problem
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        document(schema)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
