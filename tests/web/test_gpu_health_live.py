"""GPU health end to end: the simulated agent's NVML readings -> report -> engine -> the node
page, /api/v1/nodes/{name} and /metrics; a GPU falling off the bus becomes a finding."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.domain.health import XidEvent
from tests.conftest import Stack

NODE = "gpu-server-1"


def _node(stack: Stack) -> dict[str, Any]:
    body: dict[str, Any] = stack.client.get(f"/api/v1/nodes/{NODE}").json()["node"]
    return body


def _gpu(stack: Stack, index: int) -> dict[str, Any]:
    return next(g for g in _node(stack)["gpus"] if g["index"] == index)


def _finding(stack: Stack, code: str) -> dict[str, Any] | None:
    return next((f for f in _node(stack)["findings"] if f["code"] == code), None)


def test_node_api_shows_each_gpus_health_from_the_agent(host_split: Stack) -> None:
    health = _gpu(host_split, 2)["health"]
    assert health["temperature_c"] >= 34
    assert health["power_limit_w"] == 400.0
    assert (health["ecc_enabled"], health["ecc_volatile_uncorrected"]) == (True, 0)
    assert (health["xid_events"], health["lost"]) == ([], False)
    assert health["remapped_rows_uncorrectable"] == 0


def test_gpu_fallen_off_bus_is_a_finding_on_page_api_and_metrics(host_split: Stack) -> None:
    gpu = _gpu(host_split, 2)
    at = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    host_split.simulator.health.set(NODE, 2, lost=True, xid_events=[XidEvent(xid=79, at=at)])

    found: dict[str, Any] = host_split.wait(  # type: ignore[assignment]
        lambda: _finding(host_split, "gpu-fallen-off-bus"), what="gpu-fallen-off-bus"
    )
    assert found["gpu_uuid"] == gpu["uuid"]
    assert found["severity"] == "error"
    assert (found["evidence"]["gpu_index"], found["evidence"]["xids"]) == (2, "79")
    assert found["remedy"].startswith(f"kubectl cordon {NODE}; kubectl drain {NODE}")

    html = host_split.client.get(f"/nodes/{NODE}").text
    assert f'data-testid="health-lost-{gpu["uuid"]}" data-state="bad"' in html
    assert "XID 79 (last at 2026-05-01 12:00:00 UTC)" in html
    korean = host_split.client.get(f"/nodes/{NODE}", params={"lang": "ko"}).text
    assert "버스에서 떨어졌지만" in korean

    metrics = host_split.client.get("/metrics").text
    labels = f'node="{NODE}",gpu="2",UUID="{gpu["uuid"]}",Hostname="{NODE}"'
    assert f"gpu_slots_gpu_fallen_off_bus{{{labels}}} 1\n" in metrics
    assert f"gpu_slots_gpu_healthy{{{labels}}} 0\n" in metrics
    assert (
        f'gpu_slots_findings{{code="gpu-fallen-off-bus",severity="error",node="{NODE}"}} 1'
        in metrics
    )


def test_hard_throttle_is_a_warning_and_shown_on_the_page(host_split: Stack) -> None:
    gpu = _gpu(host_split, 3)
    host_split.simulator.health.set(
        NODE, 3, temperature_c=91, throttle_reasons=["hw_thermal_slowdown"]
    )

    found: dict[str, Any] = host_split.wait(  # type: ignore[assignment]
        lambda: _finding(host_split, "gpu-throttled-hard"), what="gpu-throttled-hard"
    )
    assert (found["severity"], found["evidence"]["temperature_c"]) == ("warning", 91)
    html = host_split.client.get(f"/nodes/{NODE}").text
    assert f'data-testid="health-throttle-{gpu["uuid"]}" data-state="warn"' in html
    assert f'data-testid="health-temperature-{gpu["uuid"]}" data-state="warn">91 °C' in html


def test_host_gpu_with_errors_raises_no_health_finding(host_split: Stack) -> None:
    """GPU 0 is kept for the host: Kubernetes counts no slot on it, so no mismatch."""
    host_split.simulator.health.set(NODE, 0, ecc_volatile_uncorrected=5)
    host_split.wait(
        lambda: _gpu(host_split, 0)["health"]["ecc_volatile_uncorrected"] == 5,
        what="the report with the errors",
    )
    assert _finding(host_split, "gpu-unhealthy") is None
