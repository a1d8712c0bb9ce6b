"""The ledger's records: a GPU, a MIG device, what the plugin sees of a node's GPUs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.domain.report import GpuReading, MigDeviceReading
from app.domain.snapshot import GpuProcess, SlotHolder

Role = Literal["advertised", "dra", "host", "failing", "unknown"]
Handler = Literal["device-plugin", "dra"]  # who hands a GPU out to pods


@dataclass(frozen=True)
class Visibility:
    """NVIDIA_VISIBLE_DEVICES of the plugin resolved against a node's GPUs."""

    uuids: frozenset[str]
    restricted: bool
    listed: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()
    by_index: bool = False


@dataclass
class GpuFacts:
    reading: GpuReading
    role: Role
    slots: int
    holders: list[SlotHolder] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    memory_pods_mib: int = 0
    memory_host_mib: int = 0
    mig_devices: list[MigFacts] = field(default_factory=list)  # under a MIG strategy

    @property
    def uuid(self) -> str:
        return self.reading.uuid

    @property
    def handed_by(self) -> tuple[Handler, ...]:
        """The plugin when it advertises the GPU, DRA when a driver publishes or a claim holds it.

        Both on a node that runs the two (the GPU is then counted twice).
        """
        plugin: tuple[Handler, ...] = ("device-plugin",) if self.role == "advertised" else ()
        dra = self.role == "dra" or any(h.source == "dra" for h in self.holders)
        return (*plugin, "dra") if dra else plugin


@dataclass
class MigFacts:
    """One MIG device: the resource it is advertised under, its slots and holders."""

    reading: MigDeviceReading
    parent_uuid: str
    resource: str | None
    slots: int
    holders: list[SlotHolder] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)

    @property
    def uuid(self) -> str:
        return self.reading.uuid
