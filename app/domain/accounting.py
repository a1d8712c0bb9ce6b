"""The accounting engine: one cluster view plus agent reports -> the snapshot the pages show.

Pure: no I/O, no clock (`now` is an argument). Linear in nodes + pods: pods are indexed by
node and by UID once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.dra.findings_cluster import dra_cluster_findings
from app.domain.dra.findings_node import dra_node_findings
from app.domain.dra.inventory import read_dra
from app.domain.dra.ledger import apply_dra, dra_node_state, dra_summary
from app.domain.effective_config import EffectiveConfig, resolve_config
from app.domain.facts import (
    GPU_PRESENT_LABEL,
    ClusterFacts,
    EngineMemo,
    NodeEntry,
    NodeFacts,
    agent_state,
    context_key,
    has_nvidia_capacity,
    is_k3s,
    is_plugin_pod,
    node_key,
    plugin_pod_state,
    pod_refs,
    resource_count,
)
from app.domain.findings_base import CATALOGUE, SEVERITY_RANK, sort_key
from app.domain.findings_cluster import cluster_findings
from app.domain.findings_gpu import gpu_findings
from app.domain.findings_node import node_findings
from app.domain.findings_pods import pod_findings
from app.domain.gpus import (
    GpuFacts,
    Role,
    assigned_holders,
    gpu_processes,
    holder_list,
    inferred_holders,
    resolve_visibility,
)
from app.domain.plugin import ConfigManagerRef, PluginSpec, read_plugin_spec
from app.domain.pods import PodFacts, is_ready, read_pod
from app.domain.report import ReceivedReport
from app.domain.snapshot import (
    Finding,
    GpuState,
    Mode,
    NodeState,
    PluginState,
    PodSlots,
    Snapshot,
    Totals,
)

_MIG_STRATEGIES_COUNTING_MIG = ("single", "mixed")


def build_snapshot(
    state: ClusterState,
    *,
    options: AccountingOptions,
    now: datetime,
    memo: EngineMemo | None = None,
) -> Snapshot:
    """Compute every figure and finding of the dashboard from one consistent cluster view.

    `memo` (kept by the caller from one snapshot to the next) saves re-reading pods and
    recomputing nodes that did not change (see EngineMemo); the result is the same with or
    without it.
    """
    spec = read_plugin_spec(state.daemonset) if state.daemonset is not None else None
    dra = read_dra(state.device_classes, state.resource_slices, state.resource_claims)
    default_config = resolve_config(spec, state.configmaps)
    pods_by_uid: dict[str, Manifest] = {}
    slots_by_uid: dict[str, Mapping[str, int]] = {}
    facts_by_uid: dict[str, PodFacts] = {}
    pods_by_node: dict[str, list[PodFacts]] = {}
    plugin_by_node: dict[str, Manifest] = {}
    plugin_pods: list[Manifest] = []
    read = memo.pods.read(state.pods) if memo is not None else [read_pod(p) for p in state.pods]
    for pod, pod_facts_ in zip(state.pods, read, strict=True):
        uid = pod_facts_.uid
        pods_by_uid[uid] = pod
        slots_by_uid[uid] = pod_facts_.slots
        facts_by_uid[uid] = pod_facts_
        node = pod_facts_.node
        if node is None:
            continue
        if pod_facts_.holds:
            pods_by_node.setdefault(node, []).append(pod_facts_)
        if (
            spec is not None
            and pod_facts_.namespace == spec.namespace
            and is_plugin_pod(pod, name=spec.name, namespace=spec.namespace, selector=spec.selector)
        ):
            plugin_pods.append(pod)
            if _newer(pod, plugin_by_node.get(node)):
                plugin_by_node[node] = pod

    context = context_key(state, options) if memo is not None else None
    if len({_name(n) for n in state.nodes}) != len(state.nodes):
        context = None  # two nodes of one name: nothing to key them by
    if context is not None and dra is not None:
        context = (context, dra.version)
    previous = memo.nodes if memo is not None else {}
    entries: dict[str, NodeEntry] = {}
    reused: set[str] = set()
    nodes: list[NodeFacts] = []
    for manifest in sorted(state.nodes, key=_name):
        name = _name(manifest)
        pods = pods_by_node.get(name, [])
        plugin_pod = plugin_by_node.get(name)
        received = state.reports.get(name)
        agent = (
            agent_state(received, now=now, stale_after_s=options.agent_stale_after_s)
            if received is not None
            else None
        )
        key = node_key(manifest, plugin_pod, agent, context) if context is not None else None
        entry = None
        if key is not None:
            process_pods = pod_refs(received, facts_by_uid)
            old = previous.get(name)
            if old is not None and old.reusable(key, received, pods, process_pods):
                assert old.state is not None
                entry = NodeEntry(
                    key,
                    received,
                    pods,
                    process_pods,
                    replace(old.facts, agent=agent),
                    old.findings,
                    old.state.model_copy(update={"agent": agent}),
                )
                reused.add(name)
        node_facts = (
            entry.facts
            if entry is not None
            else _node_facts(
                manifest,
                spec=spec,
                default_config=default_config,
                state=state,
                options=options,
                now=now,
                pods=pods,
                slots_by_uid=slots_by_uid,
                pods_by_uid=pods_by_uid,
                plugin_pod=plugin_pod,
            )
        )
        if entry is None:
            apply_dra(dra, node_facts)
        if key is not None and entry is None:
            entry = NodeEntry(key, received, pods, process_pods, node_facts)
        if entry is not None:
            entries[name] = entry
        nodes.append(node_facts)
    if memo is not None:
        memo.nodes = entries
        memo.reused = len(reused)
    facts = ClusterFacts(
        state=state,
        options=options,
        now=now,
        spec=spec,
        default_config=default_config,
        nodes=nodes,
        pods_by_uid=pods_by_uid,
        slots_by_uid=slots_by_uid,
        plugin_pods=plugin_pods,
        pod_facts=facts_by_uid,
    )
    findings = list(cluster_findings(facts)) + list(pod_findings(facts))
    findings += dra_cluster_findings(dra, facts)
    node_states = []
    for node_facts in nodes:
        entry = entries.get(node_facts.name)
        if entry is not None and node_facts.name in reused and entry.state is not None:
            own, node_state = entry.findings, entry.state
        else:
            own = node_findings(facts, node_facts) + gpu_findings(facts, node_facts)
            own = dra_node_findings(dra, facts, node_facts, own)
            own.sort(key=sort_key)
            node_state = dra_node_state(dra, node_facts, _node_state(node_facts, own))
            if entry is not None:
                entry.findings, entry.state = own, node_state
        node_states.append(node_state)
        findings.extend(own)
    by_node: dict[str, list[Finding]] = {}
    for item in findings:
        if item.node is not None and item.scope.value == "pod":
            by_node.setdefault(item.node, []).append(item)
    if by_node:
        node_states = [
            n.model_copy(update={"findings": sorted([*n.findings, *by_node[n.name]], key=sort_key)})
            if n.name in by_node
            else n
            for n in node_states
        ]
    findings.sort(key=sort_key)
    return Snapshot(
        generated_at=now,
        plugin=_plugin_state(spec, default_config, options),
        totals=_totals(node_states),
        nodes=node_states,
        findings=findings,
        dra=dra_summary(dra, state.nodes),
    )


def _name(node: Manifest) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def _newer(pod: Manifest, current: Manifest | None) -> bool:
    if current is None:
        return True
    created = str((pod.get("metadata") or {}).get("creationTimestamp", ""))
    return created > str((current.get("metadata") or {}).get("creationTimestamp", ""))


def _node_facts(
    node: Manifest,
    *,
    spec: PluginSpec | None,
    default_config: EffectiveConfig,
    state: ClusterState,
    options: AccountingOptions,
    now: datetime,
    pods: list[PodFacts],
    slots_by_uid: Mapping[str, Mapping[str, int]],
    pods_by_uid: Mapping[str, Manifest],
    plugin_pod: Manifest | None,
) -> NodeFacts:
    name = _name(node)
    labels: dict[str, str] = dict((node.get("metadata") or {}).get("labels") or {})
    config = default_config
    if spec is not None and isinstance(spec.config_ref, ConfigManagerRef):
        config = resolve_config(spec, state.configmaps, node_labels=labels)
    if spec is None or config.config is None:
        mode, replicas, resource = Mode.UNKNOWN, 1, options.serving_resource
        if config.config is None and spec is not None:
            resource = "nvidia.com/gpu"
    else:
        mode, replicas = config.config.mode, config.config.replicas
        resource = config.config.resource

    received = state.reports.get(name)
    gpu_data = received is not None and received.report.source != "none"
    readings = sorted(received.report.gpus, key=lambda g: g.index) if gpu_data and received else []
    visibility = resolve_visibility(spec.visible_devices, readings) if spec is not None else None

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

    pod_slots_list = []
    for pod in pods:
        count = slots_by_uid.get(pod.uid, {}).get(resource, 0)
        if count:
            pod_slots_list.append(
                PodSlots(pod=pod.key, uid=pod.uid, phase=pod.phase, slots=count, resource=resource)
            )
    pod_slots_list.sort(key=lambda p: p.pod)
    _fill_holders(gpus, pod_slots_list, received, resource)

    physical = len(readings) if gpu_data else None
    visible = len([g for g in gpus if g.role == "advertised"]) if gpu_data and spec else None
    host = physical - visible if physical is not None and visible is not None else None
    expected = None
    if visible is not None and config.config is not None:
        counts_mig = config.config.mig_strategy in _MIG_STRATEGIES_COUNTING_MIG and any(
            g.reading.mig_mode == "enabled" for g in gpus if g.role == "advertised"
        )
        expected = None if counts_mig else visible * replicas
    capacity = resource_count(node, "capacity", resource)
    allocatable = resource_count(node, "allocatable", resource)
    requested = sum(p.slots for p in pod_slots_list)
    gpu_node = (
        bool(readings)
        or has_nvidia_capacity(node)
        or plugin_pod is not None
        or labels.get(GPU_PRESENT_LABEL) == "true"
    )
    return NodeFacts(
        name=name,
        manifest=node,
        labels=labels,
        ready=is_ready(node),
        k3s=is_k3s(node),
        gpu_node=gpu_node,
        config=config,
        mode=mode,
        replicas=replicas,
        resource=resource,
        report=received,
        agent=(
            agent_state(received, now=now, stale_after_s=options.agent_stale_after_s)
            if received is not None
            else None
        ),
        visibility=visibility,
        gpus=gpus,
        physical_gpus=physical,
        visible_gpus=visible,
        host_gpus=host,
        expected_slots=expected,
        capacity=capacity,
        allocatable=allocatable,
        pods=pod_slots_list,
        requested=requested,
        free=allocatable - requested if allocatable is not None else None,
        plugin_pod=plugin_pod,
        plugin_pod_state=plugin_pod_state(plugin_pod) if plugin_pod is not None else None,
    )


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


def _node_state(facts: NodeFacts, findings: list[Finding]) -> NodeState:
    per_gpu: dict[str, list[Finding]] = {}
    for item in findings:
        if item.gpu_uuid is not None:
            per_gpu.setdefault(item.gpu_uuid, []).append(item)
    gpus = []
    for gpu in facts.gpus:
        own = per_gpu.get(gpu.uuid, [])
        worst = min((f.severity for f in own), key=SEVERITY_RANK.__getitem__, default=None)
        reading = gpu.reading
        gpus.append(
            GpuState(
                index=reading.index,
                uuid=reading.uuid,
                name=reading.name,
                role=gpu.role,
                slots=gpu.slots,
                held_slots=sum(h.slots for h in gpu.holders),
                holders=gpu.holders,
                memory_total_mib=reading.memory_total_mib,
                memory_used_mib=reading.memory_used_mib,
                memory_pods_mib=gpu.memory_pods_mib,
                memory_host_mib=gpu.memory_host_mib,
                utilization_pct=reading.utilization_pct,
                mig_mode=reading.mig_mode,
                processes=gpu.processes,
                finding_codes=sorted({f.code for f in own}),
                worst_severity=worst,
            )
        )
    return NodeState(
        name=facts.name,
        ready=facts.ready,
        gpu_node=facts.gpu_node,
        k3s=facts.k3s,
        mode=facts.mode,
        resource=facts.resource,
        replicas=facts.replicas,
        physical_gpus=facts.physical_gpus,
        visible_gpus=facts.visible_gpus,
        host_gpus=facts.host_gpus,
        expected_slots=facts.expected_slots,
        capacity=facts.capacity,
        allocatable=facts.allocatable,
        requested=facts.requested,
        free=facts.free,
        plugin_pod=facts.plugin_pod_state,
        agent=facts.agent,
        gpus=gpus,
        pods=facts.pods,
        findings=findings,
    )


def _plugin_state(
    spec: PluginSpec | None, default: EffectiveConfig, options: AccountingOptions
) -> PluginState:
    config = default.config
    source = default.source
    if spec is not None and isinstance(spec.config_ref, ConfigManagerRef):
        source = (
            f"configmap/{spec.config_ref.configmap} (per node: label {spec.config_ref.node_label})"
        )
    return PluginState(
        name=spec.name if spec else options.plugin_name,
        namespace=spec.namespace if spec else options.plugin_namespace,
        found=spec is not None,
        image=spec.image if spec else None,
        version=spec.version_text if spec else None,
        ready=spec.ready if spec else 0,
        desired=spec.desired if spec else 0,
        config_source=source,
        operator_managed=spec.operator_managed if spec else False,
        mode=config.mode if config and spec else Mode.UNKNOWN,
        replicas=config.replicas if config else 1,
        resource=config.resource if config else options.serving_resource,
        rename_by_default=config.rename_by_default if config else False,
        fail_requests_greater_than_one=config.fail_requests_greater_than_one if config else False,
    )


def _totals(nodes: list[NodeState]) -> Totals:
    return Totals(
        physical_gpus=sum(n.physical_gpus or 0 for n in nodes),
        visible_gpus=sum(n.visible_gpus or 0 for n in nodes),
        host_gpus=sum(n.host_gpus or 0 for n in nodes),
        allocatable=sum(n.allocatable or 0 for n in nodes),
        requested=sum(n.requested for n in nodes),
        free=sum(n.free or 0 for n in nodes),
    )


__all__ = ["CATALOGUE", "build_snapshot"]
