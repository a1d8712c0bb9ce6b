"""What the history answers with, from a file or from Prometheus alike."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HeldSlots:
    """A pod holding slots of one GPU, under the plugin config in force on its node."""

    gpu_uuid: str
    gpu_index: int
    pod: str
    resource: str
    slots: int
    mode: str
    replicas: int
    config: str  # where the node's plugin config comes from ("" when not known)


@dataclass(frozen=True)
class PastHold(HeldSlots):
    """Slots a pod held at some moment, read back (the node is the question's)."""

    since_s: float  # the record's start (epoch seconds) and how long it stands for
    span_s: float


@dataclass(frozen=True)
class PastGpu:
    """A GPU of a node at some moment, with the plugin config in force on the node then."""

    uuid: str
    index: int
    mode: str
    replicas: int
    config: str


@dataclass(frozen=True)
class HeldBucket:
    """Share-seconds held, used and idle, and physical GPU-seconds, in one chart bucket."""

    index: int
    share_s: float
    used_s: float
    idle_s: float
    physical_s: float
