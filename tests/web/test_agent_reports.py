"""POST /api/v1/agent/reports: authentic, valid, newest reports only; the last good one stays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests.conftest import AGENT_TOKEN, runtime_of, stack_settings
from tests.web.fakes import FakeSource

URL = "/api/v1/agent/reports"
AUTH = {"Authorization": f"Bearer {AGENT_TOKEN}"}


def report(
    *, node: str = "gpu-1", at: str = "2026-12-02T10:00:00Z", used: int = 100
) -> dict[str, Any]:
    return {
        "schema": 1,
        "node": node,
        "collected_at": at,
        "source": "nvml",
        "driver_version": "570.124.06",
        "gpus": [
            {
                "index": 0,
                "uuid": "GPU-aaaa",
                "name": "NVIDIA A100-SXM4-80GB",
                "memory_total_mib": 81920,
                "memory_used_mib": used,
                "utilization_pct": 3,
                "mig_mode": "disabled",
                "processes": [
                    {"pid": 4242, "used_memory_mib": used, "command": "<b>python</b> train.py"}
                ],
            }
        ],
    }


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = create_app(stack_settings(max_report_bytes=4096), source=FakeSource(synced=False))
    with TestClient(app) as test_client:
        yield test_client


def stored_used(client: TestClient, node: str = "gpu-1") -> int | None:
    stored = runtime_of(client.app).reports.latest().get(node)
    return None if stored is None else stored.report.gpus[0].memory_used_mib


def test_post_report_valid_token_is_stored(client: TestClient) -> None:
    response = client.post(URL, json=report(), headers=AUTH)
    assert response.status_code == 202
    assert response.json() == {"status": "stored", "node": "gpu-1"}
    assert stored_used(client) == 100


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": AGENT_TOKEN},
        {"Authorization": "Basic x"},
    ],
)
def test_post_report_without_valid_token_is_401_and_nothing_stored(
    client: TestClient, headers: dict[str, str]
) -> None:
    response = client.post(URL, json=report(), headers=headers)
    assert response.status_code == 401
    assert "agent token" in response.json()["detail"]
    assert stored_used(client) is None


def test_post_report_malformed_keeps_last_good(client: TestClient) -> None:
    client.post(URL, json=report(used=100), headers=AUTH)
    bad = report(at="2026-12-02T10:01:00Z", used=200)
    bad["gpus"][0]["memory_used_mib"] = -5
    response = client.post(URL, json=bad, headers=AUTH)
    assert response.status_code == 422
    assert "gpus.0.memory_used_mib" in response.json()["detail"]
    not_json = client.post(
        URL, content=b"{not json", headers={**AUTH, "Content-Type": "application/json"}
    )
    assert not_json.status_code == 422
    wrong_schema = client.post(
        URL, json={**report(at="2026-12-02T10:02:00Z"), "schema": 2}, headers=AUTH
    )
    assert wrong_schema.status_code == 422
    assert stored_used(client) == 100


def test_post_report_oversized_is_413_and_last_good_stays(client: TestClient) -> None:
    client.post(URL, json=report(used=100), headers=AUTH)
    big = report(at="2026-12-02T10:01:00Z", used=300)
    big["gpus"][0]["processes"][0]["command"] = "x" * 4000
    response = client.post(URL, content=json.dumps(big).encode(), headers=AUTH)
    assert response.status_code == 413
    assert "GEO_MLOPS_MAX_REPORT_BYTES" in response.json()["detail"]
    assert stored_used(client) == 100


def test_post_report_older_than_stored_is_409_and_ignored(client: TestClient) -> None:
    client.post(URL, json=report(at="2026-12-02T10:05:00Z", used=500), headers=AUTH)
    response = client.post(URL, json=report(at="2026-12-02T10:00:00Z", used=100), headers=AUTH)
    assert response.status_code == 409
    assert stored_used(client) == 500


def test_post_report_duplicate_is_200_and_unchanged(client: TestClient) -> None:
    client.post(URL, json=report(used=100), headers=AUTH)
    response = client.post(URL, json=report(used=100), headers=AUTH)
    assert response.status_code == 200
    assert response.json()["status"] == "duplicate"


def test_read_api_before_first_list_is_503_with_reason(client: TestClient) -> None:
    response = client.get("/api/v1/summary")
    assert response.status_code == 503
    assert "still listing" in response.json()["detail"]
    assert client.get("/readyz").status_code == 503
    assert client.get("/healthz").json() == {"status": "ok"}
