"""A node's GPUs and MIG devices from the agent's readings: role, slots, processes, MIG names.

Which GPUs the plugin sees (NVIDIA_VISIBLE_DEVICES against the node's GPUs), whose memory is
on them, and under a MIG strategy the resource and slots of each MIG device.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from app.domain.accounting.ledger.models import GpuFacts, MigFacts, Role, Visibility
from app.domain.accounting.pods import pod_key
from app.domain.cluster import Manifest
from app.domain.plugin.config import PluginConfig
from app.domain.plugin.daemonset import PluginSpec, Version
from app.domain.plugin.effective import EffectiveConfig
from app.domain.report import GpuReading, MigDeviceReading
from app.domain.snapshot import GpuProcess

_NO_GPUS = ("", "none", "void")
GPU_FAMILY = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
ANCHORED_MIG_PATTERNS = (0, 20, 0)  # v0.20.0 anchors MIG patterns (-me / +gfx profiles)
_BASE_PROFILE = re.compile(r"(\d+g\.\d+gb)")
_SAME_SLICES = re.compile(r"^\d+g\.\d+gb([+-].*)?$")
_MIG_STRATEGIES_COUNTING_MIG = ("single", "mixed")


def listed_devices(value: str | None) -> tuple[str, ...]:
    """The items of an NVIDIA_VISIBLE_DEVICES value that restricts (empty for all/none)."""
    if value is None or value.strip().lower() in ("all", *_NO_GPUS):
        return ()
    return tuple(item.strip() for item in value.split(",") if item.strip())


def resolve_visibility(value: str | None, gpus: Sequence[GpuReading]) -> Visibility:
    """Which of these GPUs the plugin sees: unset or all means every GPU."""
    everyone = frozenset(g.uuid for g in gpus)
    if value is None or value.strip().lower() == "all":
        return Visibility(uuids=everyone, restricted=False)
    if value.strip().lower() in _NO_GPUS:
        return Visibility(uuids=frozenset(), restricted=True)
    items = listed_devices(value)
    by_uuid = {g.uuid.lower(): g.uuid for g in gpus}
    by_index = {str(g.index): g.uuid for g in gpus}
    seen: set[str] = set()
    unmatched: list[str] = []
    for item in items:
        uuid = by_index.get(item) if item.isdigit() else by_uuid.get(item.lower())
        if uuid is None:
            unmatched.append(item)
        else:
            seen.add(uuid)
    return Visibility(
        uuids=frozenset(seen),
        restricted=True,
        listed=items,
        unmatched=tuple(unmatched),
        by_index=any(item.isdigit() for item in items),
    )


def gpu_processes(
    reading: GpuReading | MigDeviceReading, pods_by_uid: Mapping[str, Manifest]
) -> tuple[list[GpuProcess], int, int]:
    """A GPU's processes with their owners, and the MiB held by pods and by everything else."""
    processes: list[GpuProcess] = []
    pods_mib = host_mib = 0
    for proc in reading.processes:
        memory = proc.used_memory_mib or 0
        pod = pods_by_uid.get(proc.pod_uid) if proc.pod_uid else None
        if proc.pod_uid:
            owner: Literal["pod", "host", "unknown"] = "pod"
            pods_mib += memory
        else:
            owner = "host" if proc.visible else "unknown"
            host_mib += memory
        processes.append(
            GpuProcess(
                pid=proc.pid,
                used_memory_mib=proc.used_memory_mib,
                owner=owner,
                pod=pod_key(pod) if pod is not None else None,
                pod_uid=proc.pod_uid,
                container=proc.container,
                command=proc.command,
                user=proc.user,
            )
        )
    return processes, pods_mib, host_mib


def gpu_facts(
    readings: list[GpuReading],
    visibility: Visibility | None,
    replicas: int,
    pods_by_uid: Mapping[str, Manifest],
) -> list[GpuFacts]:
    gpus: list[GpuFacts] = []
    for reading in readings:
        role: Role
        if visibility is None:
            role, slots = "unknown", 0
        elif reading.uuid in visibility.uuids:
            role, slots = "advertised", replicas
        else:
            role, slots = "host", 0
        processes, pods_mib, host_mib = gpu_processes(reading, pods_by_uid)
        gpus.append(
            GpuFacts(
                reading=reading,
                role=role,
                slots=slots,
                processes=processes,
                memory_pods_mib=pods_mib,
                memory_host_mib=host_mib,
            )
        )
    return gpus


def uses_mig(gpu: GpuFacts, config: EffectiveConfig) -> bool:
    return (
        gpu.role == "advertised"
        and gpu.reading.mig_mode == "enabled"
        and config.config is not None
        and config.config.mig_strategy in _MIG_STRATEGIES_COUNTING_MIG
    )


def add_mig_devices(
    gpus: list[GpuFacts],
    config: EffectiveConfig,
    spec: PluginSpec | None,
    pods_by_uid: Mapping[str, Manifest],
) -> None:
    """Under the single or mixed strategy a MIG-enabled GPU's slots are its MIG devices'."""
    if config.config is None:
        return
    for gpu in gpus:
        if uses_mig(gpu, config):
            gpu.mig_devices = mig_facts(
                gpu.uuid,
                gpu.reading.mig_devices,
                config=config.config,
                version=spec.version if spec is not None else None,
                pods_by_uid=pods_by_uid,
            )
            gpu.slots = sum(d.slots for d in gpu.mig_devices)


def mig_resource_name(profile: str, version: Version | None) -> str | None:
    """The resource a MIG profile is advertised under by the mixed strategy.

    v0.20.0+ matches profile patterns exactly: `1g.10gb+me` -> `nvidia.com/mig-1g.10gb.me`.
    Earlier releases match unanchored, so a suffixed profile falls into its base profile's
    resource (`nvidia.com/mig-1g.10gb`). Only profiles whose compute slices equal their
    GPU slices get a pattern at all (`1c.2g.20gb` has none in v0.20).
    """
    if version is not None and version >= ANCHORED_MIG_PATTERNS:
        if not _SAME_SLICES.match(profile):
            return None
        return MIG_PREFIX + profile.replace("+", ".")
    match = _BASE_PROFILE.search(profile)
    return MIG_PREFIX + match[1] if match else None


def shared_name(config: PluginConfig, name: str) -> tuple[str, int]:
    """The advertised name and replicas of a base resource under the config's sharing."""
    for entry in config.sharing_resources:
        if entry.name == name:
            return (f"{name}.shared" if config.rename_by_default else name), entry.replicas
    return name, 1


def mig_facts(
    parent_uuid: str,
    devices: Sequence[MigDeviceReading],
    *,
    config: PluginConfig,
    version: Version | None,
    pods_by_uid: Mapping[str, Manifest],
) -> list[MigFacts]:
    """The MIG devices of one advertised MIG-enabled GPU under the config's MIG strategy."""
    found = []
    for device in devices:
        resource: str | None
        if config.mig_strategy == "single":
            resource, slots = shared_name(config, GPU_FAMILY)
        elif config.mig_strategy == "mixed":
            base = mig_resource_name(device.profile, version)
            resource, slots = shared_name(config, base) if base else (None, 0)
        else:
            resource, slots = None, 0
        processes, _, _ = gpu_processes(device, pods_by_uid)
        found.append(
            MigFacts(
                reading=device,
                parent_uuid=parent_uuid,
                resource=resource,
                slots=slots,
                processes=processes,
            )
        )
    return found
