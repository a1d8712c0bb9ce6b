"""What NVIDIA's DRA driver publishes: its DeviceClasses and one ResourceSlice per node.

Devices are named as the driver names them: `gpu-<index>` per full GPU, and on a GPU with
MIG devices one device per MIG device, `gpu-<index>-mig-<gi profile>-<start>-<size>`, with
`parentUUID` and `profile`; a GPU with MIG devices is not published whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.simulator.apiserver.store import JsonObject
from app.simulator.node.inventory import NodeInventory, SimGpu

DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "580.65.6"
# A100/H100 80GB MIG profiles: GPU instance profile id, memory slices, memory in MiB (the
# device name uses the first two; the simulated GPU's MIG device gives UUID and memory).
MIG_PROFILES: dict[str, tuple[int, int, int]] = {
    "1g.10gb": (19, 1, 9856),
    "2g.20gb": (14, 2, 19968),
    "3g.40gb": (9, 4, 40192),
    "4g.40gb": (5, 4, 40192),
    "7g.80gb": (0, 8, 80896),
}


def device_classes() -> list[JsonObject]:
    """The DeviceClasses NVIDIA's chart installs (GPU allocation enabled)."""

    def cls(name: str, kind: str, extended: str | None) -> JsonObject:
        expression = (
            f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
        )
        spec: JsonObject = {"selectors": [{"cel": {"expression": expression}}]}
        if extended:
            spec["extendedResourceName"] = extended
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": spec,
        }

    return [cls("gpu.nvidia.com", "gpu", "nvidia.com/gpu"), cls("mig.nvidia.com", "mig", None)]


def _gib(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def _device(
    name: str, kind: str, uuid: str, attributes: Mapping[str, Any], memory_mib: int
) -> JsonObject:
    """One published device: its type and UUID first, then its other attributes."""
    return {
        "name": name,
        "attributes": {"type": {"string": kind}, "uuid": {"string": uuid}, **attributes},
        "capacity": {"memory": {"value": _gib(memory_mib)}},
    }


def slice_devices(inventory: NodeInventory) -> list[JsonObject]:
    """The devices NVIDIA's driver publishes for these GPUs (MIG devices instead of a MIG GPU)."""
    devices: list[JsonObject] = []
    for gpu in inventory.gpus:
        if not gpu.healthy:
            continue
        common = {
            "productName": {"string": gpu.name},
            "driverVersion": {"version": DRIVER_VERSION},
            "cudaComputeCapability": {"version": "8.0.0"},
        }
        if not gpu.mig_devices:
            attributes = {"index": {"int": gpu.index}, **common}
            devices.append(
                _device(f"gpu-{gpu.index}", "gpu", gpu.uuid, attributes, gpu.memory_total_mib)
            )
            continue
        devices += _mig_devices(gpu, common)
    return devices


def _mig_devices(gpu: SimGpu, common: Mapping[str, Any]) -> list[JsonObject]:
    """One device per MIG device, with the UUID and memory the simulated agent reports."""
    devices = []
    start = 0
    for mig in gpu.mig_devices:
        gi, size, _ = MIG_PROFILES.get(mig.profile, (9, 4, mig.memory_total_mib))
        attributes = {
            "parentUUID": {"string": gpu.uuid},
            "profile": {"string": mig.profile},
            **common,
        }
        name = f"gpu-{gpu.index}-mig-{gi}-{start}-{size}"
        devices.append(_device(name, "mig", mig.uuid, attributes, mig.memory_total_mib))
        start += size
    return devices


def resource_slice(inventory: NodeInventory) -> JsonObject:
    """The node's one ResourceSlice (pool = node name), as the driver publishes it."""
    node = inventory.node
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": slice_devices(inventory),
        },
    }
