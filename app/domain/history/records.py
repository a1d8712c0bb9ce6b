"""What the history answers with, from a file or from Prometheus alike."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PastHold:
    """A pod that held slots of a GPU at some moment, with the plugin config then."""

    gpu_uuid: str
    gpu_index: int
    pod: str
    resource: str
    slots: int
    mode: str
    replicas: int
    config: str
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
