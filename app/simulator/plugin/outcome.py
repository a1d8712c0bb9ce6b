"""What the device plugin did on a node: its pod's state and the resources it registered."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.simulator.apiserver.store import JsonObject
from app.simulator.node.podstatus import PodState, pod_status
from app.simulator.plugin.container import plugin_container
from app.simulator.plugin.sharing import NO_SHARING, Sharing

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"


@dataclass(frozen=True)
class PluginOutcome:
    """The plugin pod's state on one node and the resources the kubelet then reports."""

    state: PodState
    message: str
    capacity: dict[str, int] = field(default_factory=dict)
    allocatable: dict[str, int] = field(default_factory=dict)
    visible: tuple[int, ...] = ()
    sharing: Sharing = NO_SHARING  # what it started with (GFD labels from the same config)
    devices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # kubelet device ids

    @property
    def ready(self) -> bool:
        return self.state == "running"


def plugin_pod_status(
    spec: Mapping[str, Any], outcome: PluginOutcome, *, now: str, node_ip: str
) -> JsonObject:
    """The plugin pod's status: its plugin container in the outcome's state, the others run."""
    return pod_status(
        spec, outcome.state, outcome.message, now=now, node_ip=node_ip, focus=plugin_container(spec)
    )
