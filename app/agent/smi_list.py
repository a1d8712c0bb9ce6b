"""`nvidia-smi -L` parsing (pure): the MIG devices of each GPU, with profile, index and UUID.

The list is the only nvidia-smi output that names a MIG device's UUID and profile; the XML
(`-q -x`) gives the same devices by index with their memory and instance IDs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.agent.readings import RawMig

_LIST_GPU = re.compile(r"^GPU \d+: .*\(UUID: (GPU-[^)\s]+)\)")
_LIST_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)\s]+)\)")


@dataclass(frozen=True, slots=True)
class ListedMig:
    """One `  MIG <profile> Device <index>: (UUID: MIG-...)` line under its parent GPU."""

    index: int
    profile: str
    uuid: str


def listed_mig_devices(text: str) -> dict[str, tuple[ListedMig, ...]]:
    """MIG devices per parent GPU UUID, in the order listed; GPUs without MIG are left out."""
    found: dict[str, list[ListedMig]] = {}
    parent: str | None = None
    for line in text.splitlines():
        gpu = _LIST_GPU.match(line)
        if gpu is not None:
            parent = gpu.group(1)
            continue
        mig = _LIST_MIG.match(line)
        if mig is not None and parent is not None:
            found.setdefault(parent, []).append(
                ListedMig(index=int(mig.group(2)), profile=mig.group(1).lower(), uuid=mig.group(3))
            )
    return {uuid: tuple(devices) for uuid, devices in found.items()}


def mig_devices_from_list(text: str) -> dict[str, tuple[RawMig, ...]]:
    """MIG devices per parent GPU UUID from `nvidia-smi -L` alone (see `unmeasured`)."""
    return {parent: unmeasured(devices) for parent, devices in listed_mig_devices(text).items()}


def unmeasured(listed: Sequence[ListedMig]) -> tuple[RawMig, ...]:
    """Listed MIG devices as readings without memory, instance IDs or processes.

    The list gives none of those: they stay None / empty unless `nvidia-smi -q -x` adds them.
    """
    return tuple(
        RawMig(
            uuid=device.uuid,
            profile=device.profile,
            gpu_instance=None,
            compute_instance=None,
            memory_total_mib=None,
            memory_used_mib=None,
        )
        for device in listed
    )
