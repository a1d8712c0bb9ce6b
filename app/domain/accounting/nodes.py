"""One node's facts: its config, its GPUs, the pods holding its slots, and its figures.

Each step is its own function so the node builder reads as the list of what a node is.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.domain.accounting.facts import (
    GPU_PRESENT_LABEL,
    NodeFacts,
    NodeInputs,
    agent_state,
    container_state,
    has_nvidia_capacity,
    is_k3s,
    plugin_pod_state,
    resource_count,
)
from app.domain.accounting.ledger.devices import add_mig_devices, gpu_facts, resolve_visibility
from app.domain.accounting.ledger.figures import (
    expected_by_resource,
    expected_slots,
    held_counts,
    node_resources,
)
from app.domain.accounting.ledger.fractions import add_fraction_holders
from app.domain.accounting.ledger.holders import every_holder, fill_holders, held_by_resource
from app.domain.accounting.ledger.models import GpuFacts, Visibility
from app.domain.accounting.pods import PodFacts, is_ready
from app.domain.accounting.schedulable import unschedulable_reason
from app.domain.cluster import AccountingOptions, Manifest
from app.domain.plugin.daemonset import ConfigManagerRef, PluginSpec
from app.domain.plugin.effective import EffectiveConfig, resolve_config
from app.domain.report import GpuReading, ReceivedReport
from app.domain.snapshot import AgentState, Mode, PodSlots


def node_name(node: Manifest) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def build_node_facts(
    node: Manifest,
    inputs: NodeInputs,
    *,
    pods: list[PodFacts],
    plugin_pod: Manifest | None,
    spec: PluginSpec | None = None,
) -> NodeFacts:
    """Everything the engine concludes about a node before any finding (`spec`: its owner)."""
    spec = spec if spec is not None else inputs.spec  # the engine's main DaemonSet by default
    name = node_name(node)
    labels: dict[str, str] = dict((node.get("metadata") or {}).get("labels") or {})
    config = _node_config(spec, inputs, labels)
    mode, replicas, resource = _mode_replicas_resource(spec, config, inputs.options)
    received = inputs.state.reports.get(name)
    readings = _readings(received)
    gpus, visibility = _node_gpus(readings or [], spec, config, replicas=replicas, inputs=inputs)
    held = held_by_resource(pods, inputs.slots_by_uid)
    fill_holders(gpus, held, received, resource, config)
    fraction_pods = add_fraction_holders(gpus, pods)
    physical, visible, failing, host = _gpu_counts(
        gpus, plugin_pod, spec, physical=len(readings) if readings is not None else None
    )
    reason = unschedulable_reason(node, ready=is_ready(node))
    allocatable, requested, free, stranded = _slot_figures(node, held, resource, reason=reason)
    return NodeFacts(
        name=name,
        manifest=node,
        labels=labels,
        ready=is_ready(node),
        k3s=is_k3s(node),
        gpu_node=_is_gpu_node(node, labels, readings or [], plugin_pod),
        config=config,
        mode=mode,
        replicas=replicas,
        resource=resource,
        report=received,
        agent=_agent(received, inputs),
        visibility=visibility,
        gpus=gpus,
        physical_gpus=physical,
        visible_gpus=visible,
        host_gpus=host,
        failing_gpus=failing,
        expected_slots=expected_slots(visible, config, gpus),
        capacity=resource_count(node, "capacity", resource),
        allocatable=allocatable,
        pods=sorted([*every_holder(held), *fraction_pods], key=lambda p: (p.pod, p.resource)),
        requested=requested,
        free=free,
        plugin_pod=plugin_pod,
        plugin_pod_state=plugin_pod_state(plugin_pod) if plugin_pod is not None else None,
        spec=spec,
        unschedulable_reason=reason,
        resources=node_resources(node, held_counts(held), schedulable=reason is None),
        expected_by_resource=expected_by_resource(gpus, config) if visible is not None else {},
        held_by_resource=held,
        stranded=stranded,
    )


def _readings(received: ReceivedReport | None) -> list[GpuReading] | None:
    """The agent's GPUs by index; None when it sent no GPU data."""
    if received is None or received.report.source == "none":
        return None
    return sorted(received.report.gpus, key=lambda g: g.index)


def _node_gpus(
    readings: list[GpuReading],
    spec: PluginSpec | None,
    config: EffectiveConfig,
    *,
    replicas: int,
    inputs: NodeInputs,
) -> tuple[list[GpuFacts], Visibility | None]:
    """Each GPU's role and slots (with its MIG devices), and what the plugin sees."""
    visibility = resolve_visibility(spec.visible_devices, readings) if spec is not None else None
    gpus = gpu_facts(readings, visibility, replicas, inputs.pods_by_uid)
    add_mig_devices(gpus, config, spec, inputs.pods_by_uid)
    return gpus, visibility


def _gpu_counts(
    gpus: list[GpuFacts],
    plugin_pod: Manifest | None,
    spec: PluginSpec | None,
    *,
    physical: int | None,
) -> tuple[int | None, int | None, int, int | None]:
    """Physical, visible, failing and host GPUs (failing ones are marked on the way)."""
    visible = None
    if physical is not None and spec:
        visible = len([g for g in gpus if g.role == "advertised"])
    failing = mark_failing(gpus, plugin_pod) if spec is not None else 0
    host = physical - visible - failing if physical is not None and visible is not None else None
    return physical, visible, failing, host


def _slot_figures(
    node: Manifest, held: Mapping[str, list[PodSlots]], resource: str, *, reason: str | None
) -> tuple[int | None, int, int | None, int]:
    """Allocatable, requested, free and stranded slots of the node's resource."""
    allocatable = resource_count(node, "allocatable", resource)
    requested = sum(p.slots for p in held.get(resource, []))
    spare = max(allocatable - requested, 0) if allocatable is not None else None
    free = (spare if reason is None else 0) if spare is not None else None
    return allocatable, requested, free, (spare or 0) if reason is not None else 0


def _agent(received: ReceivedReport | None, inputs: NodeInputs) -> AgentState | None:
    if received is None:
        return None
    return agent_state(
        received, now=inputs.ages_at, stale_after_s=inputs.options.agent_stale_after_s
    )


FAILING_STATES = frozenset(
    {
        "CrashLoopBackOff",
        "Error",
        "ImagePullBackOff",
        "ErrImagePull",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
        "OOMKilled",
        "Failed",
    }
)


def plugin_pod_failing(pod: Manifest) -> bool:
    """A plugin pod that is not ready because it fails (not because it is starting)."""
    return not is_ready(pod) and container_state(pod) in FAILING_STATES


def mark_failing(gpus: list[GpuFacts], plugin_pod: Manifest | None) -> int:
    """GPUs hidden from Kubernetes while the node's plugin pod is not ready: count them apart.

    A plugin that crash-loops advertises nothing, so the GPUs it would hide are not "kept
    for the host" by a decision that works; they are not advertised because it fails. A pod
    merely starting (ContainerCreating in a rollout) is not failing.
    """
    if plugin_pod is None or not plugin_pod_failing(plugin_pod):
        return 0
    failing = [g for g in gpus if g.role == "host"]
    for gpu in failing:
        gpu.role = "failing"
    return len(failing)


def _node_config(
    spec: PluginSpec | None, inputs: NodeInputs, labels: Mapping[str, str]
) -> EffectiveConfig:
    """The node's own config where the config-manager picks one per node label."""
    if spec is not None and isinstance(spec.config_ref, ConfigManagerRef):
        return resolve_config(
            spec, inputs.state.configmaps, node_labels=labels, readable=readable(inputs.options)
        )
    if spec is not inputs.spec:  # another plugin DaemonSet owns this node
        return resolve_config(spec, inputs.state.configmaps, readable=readable(inputs.options))
    return inputs.default_config


def readable(options: AccountingOptions) -> frozenset[str] | None:
    """Namespaces whose ConfigMaps the engine was given (None: all of them)."""
    if options.config_namespaces is None:
        return None
    return frozenset({options.plugin.namespace, *options.config_namespaces})


def _mode_replicas_resource(
    spec: PluginSpec | None, config: EffectiveConfig, options: AccountingOptions
) -> tuple[Mode, int, str]:
    if spec is None or config.config is None:
        resource = "nvidia.com/gpu" if spec is not None else options.serving_resource
        return Mode.UNKNOWN, 1, resource
    return config.config.mode, config.config.replicas, config.config.resource


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
