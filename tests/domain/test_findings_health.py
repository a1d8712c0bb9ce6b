"""GPU health against the accounting: a lost, unhealthy or hard-throttled GPU with slots."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from app.domain.health import GpuHealthReading, XidEvent, unhealthy_reasons
from app.domain.report import GpuReading
from app.domain.snapshot import Finding, Snapshot
from tests import factories as f
from tests.domain.worlds import snap, world


def _gpu(index: int, **health: Any) -> GpuReading:
    reading = f.gpu(index)
    return reading.model_copy(update={"health": GpuHealthReading(**health)})


def _snapshot(*readings: GpuReading, **kwargs: Any) -> Snapshot:
    used = {reading.index for reading in readings}
    extra = [f.gpu(i) for i in range(4) if i not in used]
    return snap(world(readings=sorted([*readings, *extra], key=_index), **kwargs))


def _index(reading: GpuReading) -> int:
    return reading.index


def _health(snapshot: Snapshot) -> list[Finding]:
    codes = {"gpu-fallen-off-bus", "gpu-unhealthy", "gpu-throttled-hard"}
    return [item for item in snapshot.findings if item.code in codes]


def _xid(code: int) -> XidEvent:
    return XidEvent(xid=code, at=f.NOW - timedelta(seconds=30))


def test_health_lost_gpu_with_free_slots_is_fallen_off_bus_with_drain_remedy() -> None:
    (found,) = _health(_snapshot(_gpu(0, lost=True, xid_events=[_xid(79)])))
    assert (found.code, found.severity.value, found.gpu_uuid) == (
        "gpu-fallen-off-bus",
        "error",
        f.gpu_uuid("gpu-1", 0),
    )
    assert found.evidence == {
        "gpu_index": 0,
        "slots": 1,
        "held_slots": 0,
        "free_slots": 1,
        "lost": True,
        "xids": "79",
    }
    assert found.remedy.startswith("kubectl cordon gpu-1; kubectl drain gpu-1 --ignore-daemonsets")


def test_health_xid_79_alone_means_fallen_off_bus() -> None:
    (found,) = _health(_snapshot(_gpu(0, xid_events=[_xid(13), _xid(79)])))
    assert found.code == "gpu-fallen-off-bus"


@pytest.mark.parametrize(
    ("health", "reasons"),
    [
        ({"ecc_volatile_uncorrected": 2}, "ecc-uncorrected"),
        ({"remapping_failed": True}, "remapping-failed"),
        ({"remapping_pending": True}, "reset-pending"),
        ({"retired_pages_pending": True}, "reset-pending"),
        ({"xid_events": [_xid(48)]}, "hardware-xid"),
        (
            {"ecc_volatile_uncorrected": 1, "xid_events": [_xid(94)]},
            "ecc-uncorrected, hardware-xid",
        ),
    ],
)
def test_health_memory_errors_make_gpu_unhealthy(health: dict[str, Any], reasons: str) -> None:
    (found,) = _health(_snapshot(_gpu(1, **health)))
    assert (found.code, found.evidence["reasons"], found.evidence["gpu_index"]) == (
        "gpu-unhealthy",
        reasons,
        1,
    )
    assert "nvidia-smi -r -i 1" in found.remedy


@pytest.mark.parametrize(
    "health",
    [
        {"temperature_c": 45, "ecc_volatile_corrected": 12, "ecc_aggregate_uncorrected": 3},
        {"xid_events": [_xid(13), _xid(31), _xid(43)]},  # application errors, not the GPU's
        {"throttle_reasons": ["gpu_idle", "sw_power_cap"]},
        {},
    ],
)
def test_health_normal_readings_raise_nothing(health: dict[str, Any]) -> None:
    assert _health(_snapshot(_gpu(0, **health))) == []


def test_health_hard_throttle_is_a_warning_with_temperature_and_power() -> None:
    reading = _gpu(
        2,
        throttle_reasons=["sw_power_cap", "hw_thermal_slowdown"],
        temperature_c=92,
        power_draw_w=180.5,
        power_limit_w=300.0,
    )
    (found,) = _health(_snapshot(f.gpu(0), f.gpu(1), reading))
    assert (found.code, found.severity.value) == ("gpu-throttled-hard", "warning")
    assert found.evidence["throttle_reasons"] == "hw_thermal_slowdown"
    assert (found.evidence["temperature_c"], found.evidence["power_draw_w"]) == (92, 180.5)


def test_health_host_gpu_without_slots_raises_nothing() -> None:
    """A GPU kept for the host is not accounted: its health is not this product's mismatch."""
    daemonset = {"env": {"NVIDIA_VISIBLE_DEVICES": f.gpu_uuid("gpu-1", 1)}}
    state = world(readings=[_gpu(0, lost=True), f.gpu(1)], allocatable=1, ds_kwargs=daemonset)
    assert _health(snap(state)) == []


def test_health_reaches_the_gpu_state() -> None:
    snapshot = _snapshot(_gpu(0, temperature_c=61, power_draw_w=250.0))
    gpu = snapshot.nodes[0].gpus[0]
    assert gpu.health is not None
    assert (gpu.health.temperature_c, gpu.health.power_draw_w) == (61, 250.0)
    assert snapshot.nodes[0].gpus[1].health is None


def test_health_report_without_health_still_validates() -> None:
    """Old agents send no `health`: the field is optional."""
    body = f.report().report.model_dump(mode="json", by_alias=True)
    assert "health" not in body["gpus"][0] or body["gpus"][0]["health"] is None
    body["gpus"][0].pop("health", None)
    assert GpuReading.model_validate(body["gpus"][0]).health is None


@pytest.mark.parametrize(
    "health",
    [{"temperature_c": "hot"}, {"ecc_volatile_uncorrected": -1}, {"throttle_reasons": ["x"]}],
)
def test_health_reading_refuses_bad_values(health: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        GpuHealthReading(**health)


def test_health_unhealthy_reasons_empty_for_unknown_readings() -> None:
    assert unhealthy_reasons(GpuHealthReading()) == []


def test_health_gpu_the_plugin_already_withdrew_raises_no_health_finding() -> None:
    """capacity 4, allocatable 3: the plugin marked one device unhealthy; unhealthy-devices
    covers it, and Kubernetes no longer counts its slot."""
    snapshot = _snapshot(_gpu(0, xid_events=[_xid(48)]), capacity=4, allocatable=3)
    assert _health(snapshot) == []
    assert "unhealthy-devices" in {item.code for item in snapshot.findings}


def test_health_two_sick_gpus_one_withdrawn_slot_raises_both() -> None:
    snapshot = _snapshot(
        _gpu(0, xid_events=[_xid(48)]), _gpu(1, lost=True), capacity=4, allocatable=3
    )
    assert sorted(item.code for item in _health(snapshot)) == [
        "gpu-fallen-off-bus",
        "gpu-unhealthy",
    ]
