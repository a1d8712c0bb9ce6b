"""Findings about what one node advertises: one function per rule, each returning 0 or 1 finding.

Split out of the node findings so each rule can be read, and tested, on its own.
"""

from __future__ import annotations

from collections.abc import Callable

from app.domain.accounting.facts import NodeFacts
from app.domain.findings.catalogue import finding
from app.domain.findings.cluster import FIXED_IMAGE, ds_ref
from app.domain.findings.remedies import Remedy, remedy
from app.domain.findings.resources import drain_old_pods, mps_daemon_missing, restart_after_cause
from app.domain.findings.shell import sh
from app.domain.findings.split_remedies import (
    editor_edits,
    elsewhere_remedy,
    per_node_remedy,
    runs_on_one_node,
    set_devices,
)
from app.domain.plugin.daemonset import UNIFIED_MEMORY_FIX, PluginSpec
from app.domain.plugin_target import PluginTarget
from app.domain.snapshot import Finding

Rule = Callable[[PluginSpec, NodeFacts], Finding | None]


def advertised_findings(
    spec: PluginSpec, node: NodeFacts, *, target: PluginTarget | None = None
) -> list[Finding]:
    """Every advertised-capacity finding of a GPU node, in catalogue order.

    `target`: the configured install, whose nodes the GPU editor changes (None: all).
    """
    found = [item for rule in _RULES if (item := rule(spec, node)) is not None]
    found += _visible_missing(spec, node, target)
    return found


def _runtime_class_missing(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    allocatable = node.allocatable or 0
    capacity = node.capacity or 0
    expected = node.expected_slots
    short = expected is not None and allocatable < expected
    if not (node.k3s and spec.runtime_class_name is None and (short or capacity == 0)):
        return None
    return finding(
        "runtime-class-missing",
        evidence={
            "kubelet_version": str(
                ((node.manifest.get("status") or {}).get("nodeInfo") or {}).get(
                    "kubeletVersion", ""
                )
            ),
            "runtime_class_name": None,
            "allocatable": allocatable,
            "expected_slots": expected,
        },
        remedy=(
            f"kubectl -n {sh(spec.namespace)} patch daemonset {sh(spec.name)} --type merge -p "
            '\'{"spec":{"template":{"spec":{"runtimeClassName":"nvidia"}}}}\''
        ),
        node=node.name,
    )


def _unified_memory(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    no_memory = [g for g in node.gpus if g.reading.memory_total_mib is None]
    if not no_memory or spec.version is None or spec.version >= UNIFIED_MEMORY_FIX:
        return None
    return finding(
        "unified-memory-unsupported",
        evidence={
            "version": spec.version_text,
            "gpu": no_memory[0].reading.name,
            "memory_total_mib": None,
            "fixed_in": "v0.17.4",
        },
        remedy=f"kubectl set image {ds_ref(spec)} {sh(f'{spec.container}={FIXED_IMAGE}')}",
        node=node.name,
    )


def _privileged_ignores_visible(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    vis = node.visibility
    physical = node.physical_gpus
    capacity = node.capacity or 0
    if not (
        spec.privileged
        and vis is not None
        and vis.restricted
        and physical is not None
        and node.visible_gpus is not None
        and physical != node.visible_gpus
        and capacity == physical * node.replicas
    ):
        return None
    return finding(
        "privileged-visible-devices-ignored",
        evidence={
            "privileged": True,
            "NVIDIA_VISIBLE_DEVICES": spec.visible_devices,
            "visible_gpus": node.visible_gpus,
            "physical_gpus": physical,
            "capacity": capacity,
        },
        remedy=(
            f"kubectl -n {sh(spec.namespace)} patch daemonset {sh(spec.name)} --type json -p "
            '\'[{"op":"remove","path":"/spec/template/spec/containers/0/'
            "securityContext/privileged\"}]'"
        ),
        node=node.name,
    )


def _silent_zero(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    config = node.config.config
    pod = node.plugin_pod_state
    capacity = node.gpu_capacity_total  # a MIG node advertises nvidia.com/mig-* only
    physical = node.physical_gpus
    if mps_daemon_missing(node):
        return None  # the missing MPS daemon is the cause, not NVML
    has_gpus = (physical or 0) > 0 or node.labels.get("nvidia.com/gpu.present") == "true"
    if not (
        config is not None
        and not config.fail_on_init_error
        and pod is not None
        and pod.phase == "Running"
        and capacity == 0
        and has_gpus
    ):
        return None
    return finding(
        "fail-on-init-silent-zero",
        evidence={
            "fail_on_init_error": False,
            "phase": pod.phase,
            "capacity": capacity,
            "physical_gpus": physical,
        },
        # the state the node's badge says; a pod that is not ready fails visibly already
        words={"state": pod.state or pod.phase, "variant": None if pod.ready else "not-ready"},
        remedy=remedy(
            f"kubectl -n {sh(spec.namespace)} logs {sh(pod.name)}; kubectl set env "
            f"{ds_ref(spec)} -c {sh(spec.container)} FAIL_ON_INIT_ERROR=true",
            "read-log-fail-on-init",
        ),
        node=node.name,
    )


def _has_unhealthy(node: NodeFacts) -> bool:
    return (
        node.capacity is not None
        and node.allocatable is not None
        and node.capacity > node.allocatable
    )


def _unhealthy(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    if not _has_unhealthy(node):
        return None
    capacity = node.capacity or 0
    allocatable = node.allocatable or 0
    pod = node.plugin_pod_state
    pod_name = pod.name if pod else "<plugin pod>"
    return finding(
        "unhealthy-devices",
        evidence={"capacity": capacity, "allocatable": allocatable, "resource": node.resource},
        words={"unhealthy": capacity - allocatable},
        remedy=remedy(
            f"kubectl -n {sh(spec.namespace)} logs {sh(pod_name)}; "
            f"kubectl -n {sh(spec.namespace)} delete pod {sh(pod_name)}",
            "read-log-then-restart",
        ),
        node=node.name,
    )


def _allocatable_mismatch(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    allocatable = node.allocatable or 0
    expected = node.expected_slots
    explained = _has_unhealthy(node) and (node.capacity or 0) == expected
    if expected is None or allocatable == expected or explained or mps_daemon_missing(node):
        return None
    return finding(
        "allocatable-mismatch",
        evidence={
            "allocatable": allocatable,
            "expected_slots": expected,
            "visible_gpus": node.visible_gpus,
            "replicas": node.replicas,
            "resource": node.resource,
        },
        remedy=_mismatch_remedy(spec, node, allocatable),
        node=node.name,
    )


def _mismatch_remedy(spec: PluginSpec, node: NodeFacts, allocatable: int) -> Remedy:
    """A running plugin advertising nothing is restarted on that node alone (plugin #1645)."""
    pod = node.plugin_pod_state
    if allocatable == 0 and pod is not None and pod.phase == "Running":
        command = f"kubectl -n {sh(spec.namespace)} delete pod {sh(pod.name)}"
        return remedy(command, "restart-plugin-pod", node=node.name)
    return restart_after_cause(spec)


def _requested_above(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    if node.allocatable is None or node.requested <= node.allocatable:
        return None
    return finding(
        "requested-above-allocatable",
        evidence={
            "requested": node.requested,
            "allocatable": node.allocatable,
            "resource": node.resource,
        },
        remedy=drain_old_pods(node),
        node=node.name,
    )


def _visible_missing(
    spec: PluginSpec, node: NodeFacts, target: PluginTarget | None
) -> list[Finding]:
    vis = node.visibility
    if vis is None or not vis.unmatched or not node.has_gpu_data:
        return []
    return [
        finding(
            "visible-device-not-on-node",
            evidence={
                "missing": ",".join(vis.unmatched),
                "node_gpus": ",".join(g.uuid for g in node.gpus),
            },
            words={"count": len(vis.unmatched)},
            remedy=_visible_remedy(spec, node, sorted(vis.uuids), target),
            node=node.name,
        )
    ]


def _visible_remedy(
    spec: PluginSpec, node: NodeFacts, uuids: list[str], target: PluginTarget | None
) -> str | Remedy:
    if runs_on_one_node(spec) and uuids:
        return set_devices(spec, uuids)
    if target is not None and not editor_edits(spec, node.name, target):
        return elsewhere_remedy(spec, node.name, target)
    return per_node_remedy(spec, node.name, uuids)


_RULES: tuple[Rule, ...] = (
    _runtime_class_missing,
    _unified_memory,
    _privileged_ignores_visible,
    _silent_zero,
    _unhealthy,
    _allocatable_mismatch,
    _requested_above,
)
