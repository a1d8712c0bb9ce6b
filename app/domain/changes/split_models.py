"""What a per-node GPU split is made of: the node's GPUs, the split state, the plan.

A node is governed by exactly one plugin DaemonSet: the shared one, or its own (a copy of
the shared one pinned to the node, with the node's UUIDs in NVIDIA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from app.domain.changes.models import ChangeWarning
from app.domain.cluster import Manifest

NODE_LABEL = "gpu-slots.io/plugin-daemonset"  # on a node: the name of its own DaemonSet
OWN_NODE_LABEL = "gpu-slots.io/node"  # on an own DaemonSet: the node it serves (label value)
OWN_NODE_ANNOTATION = "gpu-slots.io/node"  # the node's full name (a name may pass 63 chars)
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


def node_label_value(node: str) -> str:
    """`node` as a label value: itself up to 63 characters, else shortened with a hash.

    A node name may be 253 characters, a label value 63 (a 67-character node name made the
    split fail); the full name is kept in the OWN_NODE_ANNOTATION annotation (issue 33).
    """
    if len(node) <= 63:
        return node
    digest = hashlib.sha256(node.encode()).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9]+$', '', node[:54])}-{digest}"


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
    # config-manager installs: the node's nvidia.com/device-plugin.config value (None: unset)
    config_key: str | None = None
    per_node_config: bool = False

    @property
    def slots_per_gpu(self) -> int:
        return self.replicas if self.mode == "time-slicing" else 1

    @property
    def slots(self) -> int:
        return len(self.kubernetes_gpus) * self.slots_per_gpu

    def as_json(self) -> dict[str, Any]:
        """The state as a change record keeps it, in the records' one spelling (camelCase)."""
        value: dict[str, Any] = {
            "daemonset": self.daemonset,
            "own": self.own,
            "kubernetesGpus": list(self.kubernetes_gpus),
            "mode": self.mode,
            "replicas": self.replicas,
        }
        if self.per_node_config:
            value["configKey"] = self.config_key
        return value


@dataclass(frozen=True)
class SplitRequest:
    """What an admin asks for one node (kubernetes_gpus None: back to the shared DaemonSet)."""

    node: str
    kubernetes_gpus: tuple[str, ...] | None
    mode: SplitMode = "basic"
    replicas: int = 1
    confirm_host_processes: bool = False
    # config-manager installs, rollback: set the node label back to exactly this key
    restore_config_key: bool = False
    config_key: str | None = None


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
class Restart:
    """A plugin pod the plan restarts: a code the web layer words (`restart.<code>` in the
    catalogs) and the values it is worded with."""

    code: str
    params: dict[str, str | int] = field(default_factory=dict)


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
    restarts: tuple[Restart, ...]  # plugin pods that restart
    warnings: tuple[ChangeWarning, ...] = field(default_factory=tuple)

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
            if state.per_node_config:
                sharing += f" (config {state.config_key or 'unset'})"
            return f"{shared} {state.daemonset}, {sharing}, GPUs {gpus}"

        return f"node {self.node}: {one(self.before)} -> {one(self.after)}"


@dataclass(frozen=True)
class SplitMove:
    """What a split changes on one kind of install: the states, the writes and the restarts."""

    before: SplitState
    after: SplitState
    writes: tuple[ObjectWrite, ...]
    restarts: tuple[Restart, ...]  # plugin pods that restart
    warnings: tuple[ChangeWarning, ...] = ()
