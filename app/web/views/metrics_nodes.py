"""Cluster and node families: what is advertised, held, free and expected, per node and resource.

Every node that should advertise GPUs (a GPU node, or one with an nvidia.com resource) has
an allocatable series for its resource, 0 when the plugin fails, so "allocatable below
expected" can fire for the very node that lost its GPUs.
"""

from __future__ import annotations

from app import __version__
from app.domain.snapshot import NodeState, ResourceState, Snapshot
from app.web.views.metrics_family import Family, counter, gauge

GPU_ROLES = ("advertised", "dra", "host", "failing", "unknown")


def cluster_families(snapshot: Snapshot) -> list[Family]:
    """Build and plugin info, snapshot freshness, pending demand, DRA and findings."""
    build = gauge("gpu_slots_build_info", "GPU Slots build: version label, value 1")
    build.add({"version": __version__}, 1)
    generated = gauge(
        "gpu_slots_snapshot_timestamp_seconds", "Unix time the shown snapshot was computed at"
    )
    generated.add({}, snapshot.generated_at.timestamp())
    stale = gauge("gpu_slots_snapshot_stale", "1 while the API server cannot be reached")
    stale.add({}, snapshot.stale)
    rest = [*_plugin(snapshot), *_pending(snapshot), *_dra(snapshot), _findings(snapshot)]
    return [build, generated, stale, *rest]


def _plugin(snapshot: Snapshot) -> list[Family]:
    plugin = snapshot.plugin
    daemonset = {"daemonset": f"{plugin.namespace}/{plugin.name}"}
    info = gauge(
        "gpu_slots_plugin_info",
        "The device-plugin DaemonSet: version, cluster mode and resource labels, value 1",
    )
    desired = gauge("gpu_slots_plugin_pods_desired", "Plugin pods the DaemonSet should run")
    ready = gauge("gpu_slots_plugin_pods_ready", "Plugin pods of the DaemonSet that are ready")
    if plugin.found:
        info.add(
            {
                **daemonset,
                "version": plugin.version or "",
                "mode": snapshot.mode,
                "resource": plugin.resource,
            },
            1,
        )
        desired.add(daemonset, plugin.desired)
        ready.add(daemonset, plugin.ready)
    return [info, desired, ready]


def _pending(snapshot: Snapshot) -> list[Family]:
    slots = gauge("gpu_slots_pending_slots", "Slots wanted by pods not yet scheduled")
    pods = gauge("gpu_slots_pending_pods", "Pods wanting a GPU resource not yet scheduled")
    oldest = gauge(
        "gpu_slots_pending_oldest_seconds", "How long the oldest unscheduled GPU pod has waited"
    )
    for item in snapshot.pending_demand:
        labels = {"resource": item.resource}
        slots.add(labels, item.slots)
        pods.add(labels, item.pods)
        oldest.add(labels, item.oldest_s)
    return [slots, pods, oldest]


def _dra(snapshot: Snapshot) -> list[Family]:
    dra = snapshot.dra
    rows = (
        ("gpu_slots_dra_devices", "GPU and MIG devices published in ResourceSlices", dra.devices),
        ("gpu_slots_dra_allocated_devices", "DRA devices with an allocated claim", dra.allocated),
        ("gpu_slots_dra_shared_devices", "Allocated DRA devices shared by several", dra.shared),
        ("gpu_slots_dra_free_devices", "Unallocated DRA devices on schedulable nodes", dra.free),
        ("gpu_slots_dra_stranded_devices", "Unallocated DRA devices on lost nodes", dra.stranded),
        ("gpu_slots_dra_pending_claims", "GPU claims not allocated yet", dra.pending_claims),
    )
    families = []
    for name, help_text, value in rows:
        family = gauge(name, help_text)
        family.add({}, value)
        families.append(family)
    return families


def _findings(snapshot: Snapshot) -> Family:
    """Open findings by code and severity, per node where the finding has one."""
    family = gauge(
        "gpu_slots_findings",
        "Open findings by code (docs/findings.md) and severity; node where it is about one",
    )
    counts: dict[tuple[str, str, str], int] = {}
    for item in snapshot.findings:
        key = (item.code, item.severity.value, item.node or "")
        counts[key] = counts.get(key, 0) + 1
    for (code, severity, node), count in sorted(counts.items()):
        labels = {"code": code, "severity": severity}
        family.add({**labels, "node": node} if node else labels, count)
    return family


def advertising_nodes(snapshot: Snapshot) -> list[NodeState]:
    """Nodes that should advertise GPUs: GPU nodes and nodes with any GPU resource."""
    return [node for node in snapshot.nodes if node.gpu_node or node.resources]


def node_families(snapshot: Snapshot) -> list[Family]:
    """Per node: info, agent age, GPUs by role, the plugin pod, and slots per resource."""
    nodes = advertising_nodes(snapshot)
    return [*_node_info(nodes), *_agent(nodes), *_plugin_pods(nodes), *_slots(nodes)]


def _node_info(nodes: list[NodeState]) -> list[Family]:
    info = gauge(
        "gpu_slots_node_info",
        "A GPU node: its mode, main resource and allocation (device-plugin, dra), value 1",
    )
    schedulable = gauge("gpu_slots_node_schedulable", "1 when new pods can land on the node")
    gpus = gauge("gpu_slots_gpus", "Physical GPUs the node's agent reports, by role")
    for node in nodes:
        labels = {"node": node.name, "Hostname": node.name}
        info.add(
            {
                **labels,
                "mode": node.mode.value,
                "resource": node.resource,
                "allocation": node.allocation,
            },
            1,
        )
        schedulable.add({"node": node.name}, node.schedulable)
        if node.agent is None:
            continue
        by_role = dict.fromkeys(GPU_ROLES, 0)
        for gpu in node.gpus:
            by_role[gpu.role] += 1
        for role, count in by_role.items():
            gpus.add({"node": node.name, "role": role}, count)
    return [info, schedulable, gpus]


def _agent(nodes: list[NodeState]) -> list[Family]:
    age = gauge(
        "gpu_slots_agent_report_age_seconds",
        "Age of the node agent's newest report; absent: the node never reported",
    )
    info = gauge(
        "gpu_slots_agent_info", "The node agent's reader (nvml, nvidia-smi, none) and driver"
    )
    for node in nodes:
        if node.agent is None:
            continue
        age.add({"node": node.name}, round(node.agent.age_s, 3))
        info.add(
            {
                "node": node.name,
                "source": node.agent.source,
                "driver_version": node.agent.driver_version or "",
            },
            1,
        )
    return [age, info]


def _plugin_pods(nodes: list[NodeState]) -> list[Family]:
    ready = gauge("gpu_slots_plugin_pod_ready", "1 when the node's device-plugin pod is ready")
    restarts = counter(
        "gpu_slots_plugin_pod_restarts_total", "Container restarts of the node's plugin pod"
    )
    for node in nodes:
        if node.plugin_pod is None:
            continue
        labels = {"node": node.name, "pod": node.plugin_pod.name}
        ready.add(labels, node.plugin_pod.ready)
        restarts.add(labels, node.plugin_pod.restarts)
    return [ready, restarts]


def _slots(nodes: list[NodeState]) -> list[Family]:
    rows = (
        ("allocatable", "Slots the node advertises (status.allocatable; 0 when absent)"),
        ("requested", "Slots held by pods bound to the node"),
        ("free", "Schedulable free slots: never negative, 0 on unschedulable nodes"),
        ("stranded", "Free slots on a node no new pod can be scheduled on"),
    )
    families = {name: gauge(f"gpu_slots_{name}", help_text) for name, help_text in rows}
    expected = gauge(
        "gpu_slots_expected", "Slots the plugin config should give the node's main resource"
    )
    for node in nodes:
        for resource, figures in node_resources(node).items():
            labels = {"node": node.name, "resource": resource}
            for name, family in families.items():
                family.add(labels, getattr(figures, name))
        if node.expected_slots is not None:
            expected.add({"node": node.name, "resource": node.resource}, node.expected_slots)
    return [*families.values(), expected]


def node_resources(node: NodeState) -> dict[str, ResourceState]:
    """Every GPU resource of the node, its main one included at 0 when it advertises none."""
    resources = dict(node.resources)
    if node.gpu_node and node.resource not in resources:
        resources[node.resource] = ResourceState(
            allocatable=0, requested=node.requested, free=0, stranded=0
        )
    return dict(sorted(resources.items()))
