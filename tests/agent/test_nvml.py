"""The NVML reader against a fake `pynvml` module raising the real error classes."""

from __future__ import annotations

import pynvml
import pytest

from app.agent.nvml import NvmlReader
from app.agent.readings import RawProcess, ReaderUnavailableError
from tests.agent.fake_nvml import GIB, MIB, FakeGpu, FakeMig, FakeNvml, uuid_for


def test_read_plain_gpu_reports_memory_in_mib_and_processes() -> None:
    fake = FakeNvml(
        [
            FakeGpu(
                uuid=uuid_for(0),
                memory_used_bytes=20 * GIB + 5 * MIB,
                utilization_pct=87,
                mig_current=pynvml.NVML_DEVICE_MIG_DISABLE,
                processes=[(3121, 17580 * MIB), (48213, 4026 * MIB)],
            )
        ],
        driver_version="550.54.14",
    )

    readings = NvmlReader(nvml=fake).read()

    assert readings.source == "nvml"
    assert readings.driver_version == "550.54.14"
    (gpu,) = readings.gpus
    assert (gpu.index, gpu.uuid, gpu.name) == (0, uuid_for(0), "NVIDIA A100-SXM4-80GB")
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (81920, 20485)
    assert gpu.utilization_pct == 87
    assert gpu.mig_mode == "disabled"
    assert gpu.processes == (RawProcess(3121, 17580), RawProcess(48213, 4026))


def test_read_unified_memory_gpu_memory_not_supported_is_none() -> None:
    fake = FakeNvml(
        [
            FakeGpu(
                uuid=uuid_for(0),
                name="NVIDIA GB10",
                memory_total_bytes=None,
                memory_used_bytes=None,
                utilization_pct=3,
            )
        ]
    )

    (gpu,) = NvmlReader(nvml=fake).read().gpus

    assert gpu.memory_total_mib is None
    assert gpu.memory_used_mib is None
    assert gpu.utilization_pct == 3
    assert gpu.mig_mode is None  # GB10 has no MIG: Not Supported -> None


def test_read_mig_enabled_gpu_utilisation_not_supported_is_none() -> None:
    fake = FakeNvml(
        [
            FakeGpu(
                uuid=uuid_for(0),
                utilization_pct=None,
                mig_current=pynvml.NVML_DEVICE_MIG_ENABLE,
                processes=[(7, None)],
            )
        ]
    )

    (gpu,) = NvmlReader(nvml=fake).read().gpus

    assert gpu.mig_mode == "enabled"
    assert gpu.utilization_pct is None
    assert gpu.processes == (RawProcess(7, None),)  # usedGpuMemory None stays unknown


def test_read_driver_without_v3_call_falls_back_to_v2_once() -> None:
    fake = FakeNvml(
        [FakeGpu(uuid=uuid_for(i), processes=[(100 + i, GIB)]) for i in range(2)], has_v3=False
    )
    reader = NvmlReader(nvml=fake)

    first = reader.read()
    second = reader.read()

    assert [gpu.processes for gpu in first.gpus] == [
        (RawProcess(100, 1024),),
        (RawProcess(101, 1024),),
    ]
    assert second.gpus == first.gpus
    assert fake.v2_calls == 4


def test_read_function_not_found_on_v3_falls_back_to_v2() -> None:
    class NoV3(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[object]:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    fake = NoV3([FakeGpu(uuid=uuid_for(0), processes=[(42, 2 * GIB)])])

    (gpu,) = NvmlReader(nvml=fake).read().gpus

    assert gpu.processes == (RawProcess(42, 2048),)


def test_read_initialises_once_and_close_shuts_down_once() -> None:
    fake = FakeNvml([FakeGpu(uuid=uuid_for(0))])
    reader = NvmlReader(nvml=fake)

    reader.read()
    reader.read()
    reader.close()
    reader.close()

    assert (fake.init_calls, fake.shutdown_calls) == (1, 1)


def test_read_library_not_found_raises_driver_missing() -> None:
    fake = FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    with pytest.raises(ReaderUnavailableError, match="NVML library not found") as caught:
        NvmlReader(nvml=fake).read()

    assert caught.value.driver_missing


def test_read_driver_not_loaded_raises_driver_missing() -> None:
    fake = FakeNvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)

    with pytest.raises(ReaderUnavailableError, match="driver not loaded") as caught:
        NvmlReader(nvml=fake).read()

    assert caught.value.driver_missing


def test_read_after_failed_init_retries_init_next_cycle() -> None:
    fake = FakeNvml([FakeGpu(uuid=uuid_for(0))], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    reader = NvmlReader(nvml=fake)
    with pytest.raises(ReaderUnavailableError):
        reader.read()

    fake.init_error = None  # the driver module finished loading

    assert len(reader.read().gpus) == 1


def test_read_lost_gpu_is_left_out_and_named_in_problems() -> None:
    fake = FakeNvml([FakeGpu(uuid=uuid_for(0)), FakeGpu(uuid=uuid_for(1), lost=True)])

    readings = NvmlReader(nvml=fake).read()

    assert [gpu.uuid for gpu in readings.gpus] == [uuid_for(0)]
    assert readings.problems == ("GPU 1 unreadable through NVML: GPU is lost",)


def test_read_bytes_from_old_bindings_are_decoded() -> None:
    class OldBindings(FakeNvml):
        def nvmlDeviceGetName(self, handle: FakeGpu) -> bytes:  # type: ignore[override]
            return b"Tesla T4"

        def nvmlSystemGetDriverVersion(self) -> bytes:  # type: ignore[override]
            return b"470.223.02"

    readings = NvmlReader(nvml=OldBindings([FakeGpu(uuid=uuid_for(0))])).read()

    assert readings.gpus[0].name == "Tesla T4"
    assert readings.driver_version == "470.223.02"


def test_read_mig_gpu_lists_its_devices_with_profiles_and_processes() -> None:
    migs: list[FakeMig | None] = [
        FakeMig("MIG-aaaa", 1, 1, 9856, gpu_instance=7, processes=[(501, 2 * GIB)]),
        None,  # an empty slot of the GPU's 7
        FakeMig("MIG-bbbb", 3, 3, 40192, gpu_instance=1),
        FakeMig("MIG-cccc", 2, 1, 19968, gpu_instance=5),
    ]
    nvml = FakeNvml(
        [FakeGpu(uuid_for(0), mig_current=pynvml.NVML_DEVICE_MIG_ENABLE, mig_devices=migs)]
    )
    gpu = NvmlReader(nvml=nvml).read().gpus[0]
    assert [
        (m.uuid, m.profile, m.gpu_instance, m.memory_total_mib, m.processes)
        for m in gpu.mig_devices
    ] == [
        ("MIG-aaaa", "1g.10gb", 7, 9856, (RawProcess(501, 2048),)),
        ("MIG-bbbb", "3g.40gb", 1, 40192, ()),
        ("MIG-cccc", "1c.2g.20gb", 5, 19968, ()),
    ]


def test_read_mig_disabled_gpu_lists_no_devices() -> None:
    nvml = FakeNvml([FakeGpu(uuid_for(0), mig_current=pynvml.NVML_DEVICE_MIG_DISABLE)])
    assert NvmlReader(nvml=nvml).read().gpus[0].mig_devices == ()
