"""/metrics from one snapshot, literal figures: units, labels, a failing node's zero, health."""

from __future__ import annotations

from app.domain.health import GpuHealthReading
from app.web.views.metrics import render_metrics
from tests import factories as f
from tests.domain.worlds import snap, world

UUID0 = f.gpu_uuid("gpu-1", 0)
GPU0 = f'node="gpu-1",gpu="0",UUID="{UUID0}",Hostname="gpu-1"'


def _text(**kwargs: object) -> str:
    return render_metrics(snap(world(**kwargs)))  # type: ignore[arg-type]


def test_metrics_gpu_memory_in_bytes_and_utilization_as_ratio() -> None:
    reading = f.gpu(0, memory_used_mib=2048).model_copy(update={"utilization_pct": 87})
    text = _text(readings=[reading, *f.gpus(4)[1:]])
    assert f"gpu_slots_gpu_memory_used_bytes{{{GPU0}}} 2147483648\n" in text
    assert f"gpu_slots_gpu_memory_total_bytes{{{GPU0}}} 85899345920\n" in text
    assert f"gpu_slots_gpu_utilization_ratio{{{GPU0}}} 0.87\n" in text
    assert "_mib" not in text and "_percent" not in text


def test_metrics_node_without_allocatable_advertises_zero() -> None:
    text = _text(allocatable=None)
    assert 'gpu_slots_allocatable{node="gpu-1",resource="nvidia.com/gpu"} 0\n' in text
    assert 'gpu_slots_expected{node="gpu-1",resource="nvidia.com/gpu"} 4\n' in text


def test_metrics_gpu_counts_by_role_without_a_resource_label() -> None:
    text = _text()
    assert 'gpu_slots_gpus{node="gpu-1",role="advertised"} 4\n' in text
    assert 'gpu_slots_gpus{node="gpu-1",role="host"} 0\n' in text
    assert "gpu_slots_physical_gpus" not in text


def test_metrics_findings_by_code_and_the_agent_age() -> None:
    text = _text(allocatable=3)
    assert (
        'gpu_slots_findings{code="allocatable-mismatch",severity="error",node="gpu-1"} 1\n' in text
    )
    assert 'gpu_slots_agent_report_age_seconds{node="gpu-1"} 10\n' in text


def test_metrics_health_families_from_the_report() -> None:
    health = GpuHealthReading(
        temperature_c=71,
        power_draw_w=250.5,
        power_limit_w=400.0,
        throttle_reasons=["hw_slowdown"],
        ecc_enabled=True,
        ecc_volatile_corrected=4,
        ecc_volatile_uncorrected=1,
        ecc_aggregate_corrected=9,
        ecc_aggregate_uncorrected=2,
    )
    reading = f.gpu(0).model_copy(update={"health": health})
    text = _text(readings=[reading, *f.gpus(4)[1:]])
    assert f"gpu_slots_gpu_temperature_celsius{{{GPU0}}} 71\n" in text
    assert f"gpu_slots_gpu_power_usage_watts{{{GPU0}}} 250.5\n" in text
    assert f'gpu_slots_gpu_throttle_reason_active{{{GPU0},reason="hw_slowdown"}} 1\n' in text
    assert f'gpu_slots_gpu_throttle_reason_active{{{GPU0},reason="gpu_idle"}} 0\n' in text
    assert f'gpu_slots_gpu_ecc_volatile_errors_total{{{GPU0},type="uncorrected"}} 1\n' in text
    assert f'gpu_slots_gpu_ecc_aggregate_errors_total{{{GPU0},type="corrected"}} 9\n' in text
    assert f"gpu_slots_gpu_healthy{{{GPU0}}} 0\n" in text
    assert f"gpu_slots_gpu_hard_throttled{{{GPU0}}} 1\n" in text
    assert "# TYPE gpu_slots_gpu_ecc_volatile_errors_total counter\n" in text
    uuid1 = f.gpu_uuid("gpu-1", 1)
    assert f'UUID="{uuid1}"' not in text.split("# HELP gpu_slots_gpu_temperature_celsius")[1]


def test_metrics_every_family_once() -> None:
    text = _text()
    families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(families) == len(set(families))
