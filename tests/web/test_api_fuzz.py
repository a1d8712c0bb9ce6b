"""Fuzzing the JSON API from its own OpenAPI schema: no 500, no response that breaks its schema."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings

from app.settings import Settings
from tests.conftest import AGENT_TOKEN
from tests.web.fakes import app_with_world

MAX_REPORT_BYTES = Settings.model_fields["max_report_bytes"].default
schema = schemathesis.openapi.from_asgi("/openapi.json", app_with_world())


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_fuzzed_requests_never_500_and_match_schema(case: schemathesis.Case) -> None:
    # Starlette answers 405 per route, so `Allow` names only the methods of the matched
    # route when GET and PUT of one path are separate handlers; not a contract we break.
    excluded = [schemathesis.checks.allow_header_conformance]
    if case.operation.path == "/api/v1/agent/reports":
        # Rules JSON Schema cannot state (unique GPU UUIDs and indexes per report, a
        # collected_at not ahead of the dashboard's clock) answer 422 to schema-valid data;
        # tests/web/test_report_bounds.py covers them.
        excluded.append(schemathesis.checks.positive_data_acceptance)
    if case.operation.path == "/api/v1/fit":
        # A manifest's own rules (a workload kind, a container, whole GPU counts, a resource
        # some node knows) answer 422 to schema-valid objects; tests/web/test_fit_api.py and
        # tests/domain/test_fit.py cover them.
        excluded.append(schemathesis.checks.positive_data_acceptance)
    if case.operation.path in ("/api/v1/showback", "/api/v1/nodes/{name}/holders"):
        # A window's own rules (`from` before `to`, within the history's retention), a day
        # the calendar lacks and a time without a zone answer 422 to what the pattern lets
        # through; tests/web/test_showback_api.py covers them.
        excluded.append(schemathesis.checks.positive_data_acceptance)
    if case.operation.path == "/api/v1/nodes" and "continue" in (case.query or {}):
        # A `continue` token is opaque: one this API did not write is refused (422), which
        # JSON Schema cannot state; tests/web/test_node_paging.py covers it.
        excluded.append(schemathesis.checks.positive_data_acceptance)
    response = case.call(headers={"Authorization": f"Bearer {AGENT_TOKEN}"})
    if response.status_code == 413:
        # The byte limit (GEO_MLOPS_MAX_REPORT_BYTES) is checked before the schema: a body
        # over it is refused whatever it holds, which JSON Schema cannot state either.
        assert len(response.request.body or b"") > MAX_REPORT_BYTES
        return
    case.validate_response(response, excluded_checks=excluded)
