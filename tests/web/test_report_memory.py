"""Stored agent reports share their models' field-name sets (services/reports/model_memory.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.domain.report import AgentReport
from app.web.app import create_app
from tests.conftest import runtime_of, stack_settings
from tests.web.fakes import FakeSource
from tests.web.test_agent_reports import AUTH, URL, report


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = create_app(stack_settings(), source=FakeSource(synced=False))
    with TestClient(app) as test_client:
        yield test_client


def test_reports_of_two_nodes_share_field_sets_and_read_as_posted(client: TestClient) -> None:
    bodies = [report(node="gpu-1", used=100), report(node="gpu-2", used=200)]
    for body in bodies:
        assert client.post(URL, json=body, headers=AUTH).status_code == 202
    stored = runtime_of(client.app).reports.latest()
    one, two = stored["gpu-1"].report, stored["gpu-2"].report

    gpu_one, gpu_two = one.gpus[0], two.gpus[0]
    assert gpu_one.model_fields_set is gpu_two.model_fields_set
    assert gpu_one.processes[0].model_fields_set is gpu_two.processes[0].model_fields_set
    assert one.model_fields_set is two.model_fields_set
    # Same names, same answers as a report validated apart (nothing shared).
    for body, kept in zip(bodies, (one, two), strict=True):
        fresh = AgentReport.model_validate(body)
        assert kept == fresh
        assert kept.gpus[0].model_fields_set == fresh.gpus[0].model_fields_set
        assert kept.model_dump(exclude_unset=True) == fresh.model_dump(exclude_unset=True)
    assert (gpu_one.memory_used_mib, gpu_two.memory_used_mib) == (100, 200)
    assert "memory_used_mib" in gpu_one.model_fields_set
    assert "mig_devices" not in gpu_one.model_fields_set

    # A copy with an update gets its own set: the shared one stays as it was.
    copied = gpu_one.model_copy(update={"mig_devices": []})
    assert "mig_devices" in copied.model_fields_set
    assert "mig_devices" not in gpu_two.model_fields_set
