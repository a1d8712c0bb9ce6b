"""The DRA shapes the snapshot and the JSON API carry (no dependency on the rest of domain)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.domain.described import Described

Allocation = Literal["device-plugin", "dra", "both", "none"]
Strategy = Literal["Exclusive", "TimeSlicing", "MPS"]


class _Out(Described):
    model_config = ConfigDict(frozen=True)


class DraSharing(_Out):
    """How the pods of one claim share its device, from the claim's opaque GpuConfig."""

    strategy: Strategy
    """Exclusive: one pod; TimeSlicing or MPS: from GpuConfig, or TimeSlicing when several pods use
    a claim without a sharing config"""
    configured: bool
    """True when the claim's GpuConfig sets the strategy"""
    interval: str | None = None
    """TimeSlicing interval: Default | Short | Medium | Long"""
    active_thread_pct: int | None = None
    """MPS defaultActiveThreadPercentage"""
    pinned_memory_limit: str | None = None
    """MPS defaultPinnedDeviceMemoryLimit, e.g. 10Gi"""


class DraShare(_Out):
    """A claim's share of a shareable device (consumable capacity, Kubernetes 1.34+)."""

    claim: str
    """namespace/name"""
    share_id: str | None
    """status.allocation.devices.results[].shareID"""
    consumed_capacity: dict[str, str]
    """consumedCapacity of the result, e.g. {memory: 10Gi}"""


class DraDevice(_Out):
    """What a DRA driver says of one device in its ResourceSlice, as the API shows it."""

    driver: str
    """The DRA driver publishing the device, e.g. gpu.nvidia.com"""
    pool: str
    """The ResourceSlice pool (usually the node's name)"""
    name: str
    """Device name in the ResourceSlice, e.g. gpu-0"""
    type: str | None
    """gpu | mig (attribute type)"""
    uuid: str | None
    """The GPU or MIG UUID the driver gives the device; null when it gives none"""
    parent_uuid: str | None
    """The physical GPU of a MIG device"""
    profile: str | None
    """MIG profile, e.g. 3g.40gb"""
    product_name: str | None
    """The device's product name attribute"""
    memory_mib: int | None
    """Capacity memory in MiB"""


class DraDeviceState(DraDevice):
    """One device a DRA driver publishes on a node, and the claims allocated to it."""

    claims: list[str]
    """namespace/name of the claims allocated to it"""
    shares: list[DraShare] = Field(default_factory=list)
    """Per-claim shares, where the results carry them"""


class DraInstall(_Out):
    """The DRA driver's install: read-only here (its owner changes it, not GPU Slots)."""

    daemonset: str
    """namespace/name of the kubelet-plugin DaemonSet"""
    managed_by: Literal["gpu-operator", "helm", "other"]
    """Who installed the driver: gpu-operator | helm | other"""
    device_classes: list[str]
    """DeviceClasses of driver gpu.nvidia.com"""
    extended_resources: list[str]
    """extendedResourceName of those classes; empty: no nvidia.com/gpu mapping"""
    device_plugin: bool
    """A device-plugin DaemonSet runs too; false: DRA only (no plugin ConfigMap)"""


class DraSummary(_Out):
    """Cluster totals of DRA devices, kept apart from device-plugin slots."""

    drivers: list[str]
    """DRA drivers publishing GPU devices"""
    devices: int
    """GPU and MIG devices published in ResourceSlices"""
    allocated: int
    """Devices with at least one allocated claim"""
    shared: int
    """Allocated devices shared by several pods, claims, TimeSlicing or MPS"""
    free: int
    """Unallocated devices on Ready, schedulable nodes"""
    stranded: int = 0
    """Unallocated devices on NotReady or cordoned nodes"""
    pending_claims: int
    """GPU claims not allocated yet"""
    extended_resources: list[str] = Field(default_factory=list)
    """Extended resource names a DeviceClass maps to DRA (e.g. nvidia.com/gpu)"""
    shares: int = 0
    """ConsumableShares: capacity `shares` of devices several claims draw from"""
    shares_allocated: int = 0
    """Shares the claims' results consumed (1 each by default)"""
    install: DraInstall | None = None
    """The DRA driver's DaemonSet and owner, when one runs"""


EMPTY_SUMMARY = DraSummary(drivers=[], devices=0, allocated=0, shared=0, free=0, pending_claims=0)
