"""The engine's input: the cluster as plain Kubernetes manifests (camelCase JSON dicts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.plugin_target import PluginTarget
from app.domain.report import ReceivedReport

Manifest = dict[str, Any]


@dataclass(frozen=True)
class AccountingOptions:
    """The settings the engine needs, copied out of Settings so the domain stays pure."""

    plugin: PluginTarget = field(default_factory=PluginTarget)
    plugin_configmap_name: str = "nvidia-device-plugin-config"
    serving_resource: str = "nvidia.com/gpu"
    agent_stale_after_s: float = 90.0
    memory_pressure_pct: float = 90.0
    # Namespaces whose ConfigMaps the cache reads besides the plugin's; None: all.
    config_namespaces: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ClusterState:
    """One consistent view of what the cache holds and what agents reported."""

    daemonset: Manifest | None
    configmaps: Mapping[str, Manifest]  # ConfigMaps of the plugin's namespace, by name
    nodes: Sequence[Manifest]
    pods: Sequence[Manifest]
    reports: Mapping[str, ReceivedReport] = field(default_factory=dict)  # by node name
    # resource.k8s.io/v1 (empty where the cluster has no DRA API)
    device_classes: Sequence[Manifest] = ()
    resource_slices: Sequence[Manifest] = ()
    resource_claims: Sequence[Manifest] = ()
    # Every DaemonSet the cache sees (issue 12): other plugin installs (Helm chart, GPU
    # Operator, per node group) are found among them; `daemonset` stays the configured one.
    # ConfigMaps of other namespaces are keyed "namespace/name" in `configmaps`.
    daemonsets: Sequence[Manifest] = ()
