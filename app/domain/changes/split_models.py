"""What a per-node GPU split is made of: the node's GPUs, the split state, the plan.

A node is governed by exactly one plugin DaemonSet: the shared one, or its own (a copy of
the shared one pinned to the node, with the node's UUIDs in NVIDIA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from app.domain.cluster import Manifest

NODE_LABEL = "gpu-slots.io/plugin-daemonset"  # on a node: the name of its own DaemonSet
OWN_NODE_LABEL = "gpu-slots.io/node"  # on an own DaemonSet: the node it serves
SPLIT_OF_LABEL = "gpu-slots.io/split-of"  # on an own DaemonSet: the shared DaemonSet's name
SPLIT_ANNOTATION = "gpu-slots.io/split"  # on an own DaemonSet: its split as JSON
CONFIG_VOLUME = "gpu-slots-node-config"
CONFIG_DIR = "/etc/gpu-slots/node-config"
CONFIG_KEY = "config.yaml"

SplitMode = Literal["basic", "time-slicing"]


def own_name(shared: str, node: str) -> str:
    """The node's own DaemonSet name: `<shared>-<node>`, shortened with a hash past 63."""
    name = f"{shared}-{node}".lower()
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{re.sub(r'[^a-z0-9]+$', '', name[:54])}-{digest}"


def editor_path(node: str) -> str:
    """The admin page that edits a node's GPU split."""
    return f"/admin/nodes/{node}/gpus"


@dataclass(frozen=True)
class NodeGpu:
    """One physical GPU of the node as the agent reports it."""

    uuid: str
    index: int
    name: str
    memory_total_mib: int | None
    host_processes: tuple[str, ...]  # "pid 41017 alice: python train.py"
    pods: tuple[str, ...]  # namespace/name of pods holding slots or running on it


@dataclass(frozen=True)
class SplitState:
    """Which DaemonSet governs a node, the GPUs it gives Kubernetes and how they are shared."""

    daemonset: str
    own: bool
    kubernetes_gpus: tuple[str, ...]
    mode: str
    replicas: int

    @property
    def slots_per_gpu(self) -> int:
        return self.replicas if self.mode == "time-slicing" else 1

    @property
    def slots(self) -> int:
        return len(self.kubernetes_gpus) * self.slots_per_gpu

    def as_json(self) -> dict[str, Any]:
        return {
            "daemonset": self.daemonset,
            "own": self.own,
            "kubernetes_gpus": list(self.kubernetes_gpus),
            "mode": self.mode,
            "replicas": self.replicas,
        }


@dataclass(frozen=True)
class SplitRequest:
    """What an admin asks for one node (kubernetes_gpus None: back to the shared DaemonSet)."""

    node: str
    kubernetes_gpus: tuple[str, ...] | None
    mode: SplitMode = "basic"
    replicas: int = 1
    confirm_host_processes: bool = False


@dataclass(frozen=True)
class ObjectWrite:
    """One write of a plan, in the order it is made."""

    action: Literal["create", "replace", "delete", "label"]
    kind: Literal["DaemonSet", "ConfigMap", "Node"]
    name: str
    before: Manifest | None
    after: Manifest | None  # for "label": {"labels": {key: value-or-None}}

    @property
    def resource_version(self) -> str | None:
        if self.before is None:
            return None
        value = (self.before.get("metadata") or {}).get("resourceVersion")
        return str(value) if value is not None else None

    @property
    def key(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


@dataclass(frozen=True)
class SplitPlan:
    """The exact writes that move a node from `before` to `after`, and what they do."""

    kind: Literal["split", "rollback"]
    node: str
    before: SplitState
    after: SplitState
    writes: tuple[ObjectWrite, ...]
    slots_before: int | None
    host_processes: tuple[str, ...]  # on GPUs going to Kubernetes: the admin must confirm
    pods_on_host_gpus: tuple[str, ...]  # holding slots on GPUs going to the host
    restarts: tuple[str, ...]  # plugin pods that restart
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def resource_versions(self) -> dict[str, str | None]:
        return {w.key: w.resource_version for w in self.writes}

    @property
    def blocking(self) -> bool:
        return bool(self.host_processes)

    def describe(self) -> str:
        def one(state: SplitState) -> str:
            gpus = ",".join(state.kubernetes_gpus) or "none"
            shared = "own DaemonSet" if state.own else "shared DaemonSet"
            sharing = f"time-slicing x{state.replicas}" if state.mode == "time-slicing" else "basic"
            return f"{shared} {state.daemonset}, {sharing}, GPUs {gpus}"

        return f"node {self.node}: {one(self.before)} -> {one(self.after)}"
