"""Every operation of the OpenAPI document, fuzzed anonymous and as admin, against a live
dashboard on the simulator: no 5xx, no answer slower than a second, and nothing written
by a refused request (issue 48). The example count is OPENAPI_EXAMPLES (tests/fuzz/watch.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis

from tests.conftest import Stack
from tests.fuzz.watch import (
    ADMIN,
    OPENAPI_EXAMPLES,
    fuzz_settings,
    healthz_s,
    held,
    live_stack,
    timed,
    written_state,
)
from tests.web.fakes import app_with_world

CALLERS: dict[str, dict[str, str]] = {"anonymous": {}, "admin": ADMIN}


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with live_stack("host-split") as live:
        yield live


# The document the live dashboard serves (one app factory), read from an app in memory:
# the cases are sent over HTTP to the live dashboard of the `stack` fixture.
# The agents' report intake is left out: an anonymous or admin caller is refused before
# its body is read, and generating its large bodies costs minutes; tests/web/test_api_fuzz.py
# fuzzes it with the agent's token (make check).
schema = schemathesis.openapi.from_dict(app_with_world().openapi()).exclude(
    path="/api/v1/agent/reports"
)
# Generated cases only, OPENAPI_EXAMPLES of each operation (the coverage phase's boundary
# cases are tests/web/test_api_fuzz.py's, in make check): a fixed count that fits the tier.
schema.config.phases.coverage.enabled = False


@schema.parametrize()
@fuzz_settings(OPENAPI_EXAMPLES)
def test_no_operation_answers_5xx_slowly_or_writes_when_refused(
    case: schemathesis.Case, stack: Stack
) -> None:
    writes = case.method.upper() != "GET" and (case.query or {}).get("dryRun") not in (True, "true")
    url = stack.dashboard_url
    for caller, headers in CALLERS.items():
        before = written_state(stack) if writes else ""
        answer, took = timed(lambda h=headers: case.call(base_url=url, headers=h, timeout=30))
        what = f"{caller}: {case.method} {case.formatted_path} {case.query or ''}"
        held(answer.status_code, answer.text, took, what=what, write=writes)
        if writes and 400 <= answer.status_code < 500:
            assert written_state(stack) == before, f"{what}: refused, yet something was written"
    assert healthz_s(stack) < 1.0
