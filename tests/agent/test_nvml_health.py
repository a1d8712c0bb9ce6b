"""GPU health through NVML (fake `pynvml` raising the real error classes): temperature,
power, clocks-event reasons, ECC, retired pages, remapped rows, XID events, a lost GPU."""

from __future__ import annotations

from datetime import UTC, datetime

import pynvml

from app.agent.nvml import NvmlReader
from app.domain.health import GpuHealthReading, XidEvent
from app.domain.report import GpuReading
from tests.agent.fake_nvml import FakeGpu, FakeHealth, FakeNvml, uuid_for

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CORRECTED, UNCORRECTED = (
    pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
    pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
)
VOLATILE, AGGREGATE = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC


def _gpu(index: int = 0, health: FakeHealth | None = None) -> FakeGpu:
    return FakeGpu(uuid=uuid_for(index), mig_current=pynvml.NVML_DEVICE_MIG_DISABLE, health=health)


def _reader(fake: FakeNvml) -> NvmlReader:
    return NvmlReader(nvml=fake, now=lambda: NOW)


def _health(fake: FakeNvml, reader: NvmlReader | None = None) -> list[GpuHealthReading | None]:
    return [gpu.health for gpu in (reader or _reader(fake)).read().gpus]


def test_nvml_health_reads_every_field_in_base_units() -> None:
    health = FakeHealth(
        temperature_c=83,
        power_mw=287_450,
        power_limit_mw=300_000,
        clock_reasons=pynvml.nvmlClocksEventReasonSwPowerCap
        | pynvml.nvmlClocksEventReasonHwSlowdown,
        ecc={
            (CORRECTED, VOLATILE): 5,
            (UNCORRECTED, VOLATILE): 1,
            (CORRECTED, AGGREGATE): 120,
            (UNCORRECTED, AGGREGATE): 2,
        },
        retired_single=3,
        retired_double=1,
        retired_pending=True,
        remapped=(4, 1, True, False),
    )
    (found,) = _health(FakeNvml([_gpu(0, health)]))
    assert found == GpuHealthReading(
        temperature_c=83,
        power_draw_w=287.45,
        power_limit_w=300.0,
        throttle_reasons=["sw_power_cap", "hw_slowdown"],
        ecc_enabled=True,
        ecc_volatile_corrected=5,
        ecc_volatile_uncorrected=1,
        ecc_aggregate_corrected=120,
        ecc_aggregate_uncorrected=2,
        retired_pages_single_bit=3,
        retired_pages_double_bit=1,
        retired_pages_pending=True,
        remapped_rows_correctable=4,
        remapped_rows_uncorrectable=1,
        remapping_pending=True,
        remapping_failed=False,
        xids_watched=True,
    )


def test_nvml_health_not_supported_everywhere_is_all_unknown_not_an_error() -> None:
    """A consumer card: no ECC, no retirement, no remapping, no reasons; still reported."""
    (found,) = _health(FakeNvml([_gpu(0, None)]))
    assert found == GpuHealthReading()


def test_nvml_health_ecc_off_reports_no_counts() -> None:
    (found,) = _health(
        FakeNvml([_gpu(0, FakeHealth(ecc_enabled=False, ecc={(UNCORRECTED, VOLATILE): 9}))])
    )
    assert found is not None
    assert found.ecc_enabled is False
    assert (found.ecc_volatile_uncorrected, found.ecc_aggregate_corrected) == (None, None)


def test_nvml_health_older_driver_reads_throttle_reasons() -> None:
    health = FakeHealth(
        clock_reasons=pynvml.nvmlClocksEventReasonHwThermalSlowdown, event_reasons_missing=True
    )
    (found,) = _health(FakeNvml([_gpu(0, health)]))
    assert found is not None and found.throttle_reasons == ["hw_thermal_slowdown"]


def test_nvml_xid_events_arrive_on_the_next_pass_and_stay() -> None:
    gpus = [_gpu(0, FakeHealth()), _gpu(1, FakeHealth())]
    fake = FakeNvml(gpus)
    reader = _reader(fake)
    assert [h.xid_events if h else None for h in _health(fake, reader)] == [[], []]
    fake.raise_xid(gpus[1], 79)
    fake.raise_xid(gpus[1], 48)
    first = _health(fake, reader)
    second = _health(fake, reader)
    expected = [XidEvent(xid=79, at=NOW), XidEvent(xid=48, at=NOW)]
    assert [h.xid_events if h else None for h in first] == [[], expected]
    assert second == first


def test_nvml_xid_events_keep_the_latest_64() -> None:
    gpu = _gpu(0, FakeHealth())
    fake = FakeNvml([gpu])
    reader = _reader(fake)
    reader.read()
    for xid in range(100):
        fake.raise_xid(gpu, xid)
    (found,) = _health(fake, reader)
    assert found is not None and [e.xid for e in found.xid_events] == list(range(36, 100))


def test_nvml_gpu_without_xid_support_leaves_the_others_watched() -> None:
    gpus = [_gpu(0, FakeHealth(xid_supported=False)), _gpu(1, FakeHealth())]
    fake = FakeNvml(gpus)
    reader = _reader(fake)
    reader.read()
    fake.raise_xid(gpus[0], 13)
    fake.raise_xid(gpus[1], 31)
    assert [[e.xid for e in h.xid_events] if h else None for h in _health(fake, reader)] == [
        [],
        [31],
    ]
    watched = [h.xids_watched if h else None for h in _health(fake, reader)]
    assert watched == [False, True]  # the page says "not watched", not "no XID errors"


def test_nvml_gpu_lost_after_a_read_is_reported_fallen_off_the_bus() -> None:
    gpus = [_gpu(0, FakeHealth()), _gpu(1, FakeHealth())]
    fake = FakeNvml(gpus)
    reader = _reader(fake)
    reader.read()
    fake.raise_xid(gpus[1], 79)
    reader.read()
    gpus[1].lost = True
    readings = reader.read()
    assert [g.uuid for g in readings.gpus] == [uuid_for(0), uuid_for(1)]
    lost = readings.gpus[1]
    assert lost.health is not None and lost.health.lost is True
    assert [e.xid for e in lost.health.xid_events] == [79]
    assert (lost.memory_total_mib, lost.utilization_pct) == (None, None)
    assert any("GPU 1 unreadable" in problem for problem in readings.problems)
    GpuReading(index=lost.index, uuid=lost.uuid, name=lost.name, health=lost.health)  # validates


def test_nvml_gpu_lost_before_any_read_is_only_a_problem() -> None:
    gpus = [_gpu(0, FakeHealth()), _gpu(1, FakeHealth())]
    gpus[1].lost = True
    readings = _reader(FakeNvml(gpus)).read()
    assert [g.uuid for g in readings.gpus] == [uuid_for(0)]


def test_nvml_close_frees_the_event_set() -> None:
    fake = FakeNvml([_gpu(0, FakeHealth())])
    reader = _reader(fake)
    reader.read()
    reader.close()
    assert fake.freed_sets == 1
    reader.read()  # initialises again, with a new set
    assert len(fake.event_sets) == 2


def test_nvml_gpu_lost_between_handle_and_health_calls_is_lost() -> None:
    """The handle was had, then every call says GPU_IS_LOST: the reading says so."""
    (found,) = _health(FakeNvml([_gpu(0, FakeHealth(lost=True))]))
    assert found is not None and found.lost is True
    assert found.temperature_c is None
