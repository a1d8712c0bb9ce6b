"""Simulated hardware: the GPUs of a node and the processes running on them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SimMig:
    """One MIG device carved out of a simulated GPU."""

    uuid: str
    profile: str  # e.g. 1g.10gb, 3g.40gb, 1g.24gb+me
    memory_total_mib: int = 9856


@dataclass(frozen=True)
class SimGpu:
    """One simulated physical GPU, as NVML would describe it."""

    index: int
    uuid: str
    name: str = "NVIDIA A100-SXM4-80GB"
    memory_total_mib: int = 81920
    memory_supported: bool = True  # False: unified memory, NVML answers Not Supported
    healthy: bool = True
    mig_devices: tuple[SimMig, ...] = ()  # non-empty: MIG mode enabled

    @property
    def mig_enabled(self) -> bool:
        return bool(self.mig_devices)


@dataclass(frozen=True)
class NodeInventory:
    """What the simulator knows about a node beyond its Kubernetes object."""

    node: str
    gpus: tuple[SimGpu, ...]
    k3s: bool = False
    gfd: bool = False
    pod_resources: bool = False
    dra: bool = False  # NVIDIA's DRA driver, not the device plugin, serves this node


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on one GPU: a host process, or one in a pod's container."""

    node: str
    gpu_index: int
    pid: int
    used_memory_mib: int
    command: str = ""
    user: str | None = None
    pod_namespace: str | None = None
    pod_name: str | None = None
    container: str | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def is_pod(self) -> bool:
        return self.pod_name is not None
