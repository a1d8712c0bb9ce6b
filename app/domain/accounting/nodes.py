"""One node's facts: its config, its GPUs, the pods holding its slots, and its figures.

Each step is its own function so the node builder reads as the list of what a node is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from app.domain.accounting.facts import (
    GPU_PRESENT_LABEL,
    NodeFacts,
    agent_state,
    has_nvidia_capacity,
    is_k3s,
    plugin_pod_state,
    resource_count,
)
from app.domain.accounting.gpus import (
    GpuFacts,
    Role,
    Visibility,
    assigned_holders,
    gpu_processes,
    holder_list,
    inferred_holders,
    resolve_visibility,
)
from app.domain.accounting.pods import PodFacts, is_ready
from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.plugin.daemonset import ConfigManagerRef, PluginSpec
from app.domain.plugin.effective import EffectiveConfig, resolve_config
from app.domain.report import GpuReading, ReceivedReport
from app.domain.snapshot import Mode, PodSlots

_MIG_STRATEGIES_COUNTING_MIG = ("single", "mixed")


@dataclass(frozen=True)
class NodeInputs:
    """What the engine found for every node once: the plugin, its default config, the pods."""

    spec: PluginSpec | None
    default_config: EffectiveConfig
    state: ClusterState
    options: AccountingOptions
    now: datetime
    slots_by_uid: Mapping[str, Mapping[str, int]]
    pods_by_uid: Mapping[str, Manifest]


def node_name(node: Manifest) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def build_node_facts(
    node: Manifest,
    inputs: NodeInputs,
    *,
    pods: list[PodFacts],
    plugin_pod: Manifest | None,
) -> NodeFacts:
    """Everything the engine concludes about one node before any finding."""
    spec = inputs.spec
    name = node_name(node)
    labels: dict[str, str] = dict((node.get("metadata") or {}).get("labels") or {})
    config = _node_config(spec, inputs, labels)
    mode, replicas, resource = _mode_replicas_resource(spec, config, inputs.options)
    received = inputs.state.reports.get(name)
    gpu_data = received is not None and received.report.source != "none"
    readings = sorted(received.report.gpus, key=lambda g: g.index) if gpu_data and received else []
    visibility = resolve_visibility(spec.visible_devices, readings) if spec is not None else None
    gpus = _gpu_facts(readings, visibility, replicas, inputs.pods_by_uid)
    pod_slots_list = _pod_slots(pods, inputs.slots_by_uid, resource)
    _fill_holders(gpus, pod_slots_list, received, resource)

    physical = len(readings) if gpu_data else None
    visible = len([g for g in gpus if g.role == "advertised"]) if gpu_data and spec else None
    host = physical - visible if physical is not None and visible is not None else None
    allocatable = resource_count(node, "allocatable", resource)
    requested = sum(p.slots for p in pod_slots_list)
    return NodeFacts(
        name=name,
        manifest=node,
        labels=labels,
        ready=is_ready(node),
        k3s=is_k3s(node),
        gpu_node=_is_gpu_node(node, labels, readings, plugin_pod),
        config=config,
        mode=mode,
        replicas=replicas,
        resource=resource,
        report=received,
        agent=(
            agent_state(received, now=inputs.now, stale_after_s=inputs.options.agent_stale_after_s)
            if received is not None
            else None
        ),
        visibility=visibility,
        gpus=gpus,
        physical_gpus=physical,
        visible_gpus=visible,
        host_gpus=host,
        expected_slots=_expected_slots(visible, config, gpus),
        capacity=resource_count(node, "capacity", resource),
        allocatable=allocatable,
        pods=pod_slots_list,
        requested=requested,
        free=allocatable - requested if allocatable is not None else None,
        plugin_pod=plugin_pod,
        plugin_pod_state=plugin_pod_state(plugin_pod) if plugin_pod is not None else None,
    )


def _node_config(
    spec: PluginSpec | None, inputs: NodeInputs, labels: Mapping[str, str]
) -> EffectiveConfig:
    """The node's own config where the config-manager picks one per node label."""
    if spec is not None and isinstance(spec.config_ref, ConfigManagerRef):
        return resolve_config(spec, inputs.state.configmaps, node_labels=labels)
    return inputs.default_config


def _mode_replicas_resource(
    spec: PluginSpec | None, config: EffectiveConfig, options: AccountingOptions
) -> tuple[Mode, int, str]:
    if spec is None or config.config is None:
        resource = "nvidia.com/gpu" if spec is not None else options.serving_resource
        return Mode.UNKNOWN, 1, resource
    return config.config.mode, config.config.replicas, config.config.resource


def _gpu_facts(
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


def _pod_slots(
    pods: list[PodFacts], slots_by_uid: Mapping[str, Mapping[str, int]], resource: str
) -> list[PodSlots]:
    found = []
    for pod in pods:
        count = slots_by_uid.get(pod.uid, {}).get(resource, 0)
        if count:
            found.append(
                PodSlots(pod=pod.key, uid=pod.uid, phase=pod.phase, slots=count, resource=resource)
            )
    found.sort(key=lambda p: p.pod)
    return found


def _fill_holders(
    gpus: list[GpuFacts], pods: list[PodSlots], received: ReceivedReport | None, resource: str
) -> None:
    assignments = received.report.assignments if received is not None else None
    if assignments is not None:
        held = assigned_holders(assignments, resource)
        assigned = True
    else:
        held = inferred_holders(gpus, pods)
        assigned = False
    for gpu in gpus:
        gpu.holders = holder_list(held.get(gpu.uuid, {}), assigned=assigned)


def _expected_slots(
    visible: int | None, config: EffectiveConfig, gpus: list[GpuFacts]
) -> int | None:
    if visible is None or config.config is None:
        return None
    counts_mig = config.config.mig_strategy in _MIG_STRATEGIES_COUNTING_MIG and any(
        g.reading.mig_mode == "enabled" for g in gpus if g.role == "advertised"
    )
    return None if counts_mig else visible * config.config.replicas


def _is_gpu_node(
    node: Manifest,
    labels: Mapping[str, str],
    readings: list[GpuReading],
    plugin_pod: Manifest | None,
) -> bool:
    return (
        bool(readings)
        or has_nvidia_capacity(node)
        or plugin_pod is not None
        or labels.get(GPU_PRESENT_LABEL) == "true"
    )
