"""Findings over the per-resource ledger: stranded slots, overcommit and double booking per
resource, MIG resources short of their devices, a missing MPS daemon, pending demand."""

from __future__ import annotations

from app.domain.accounting.facts import NodeFacts
from app.domain.findings.catalogue import finding
from app.domain.findings.cluster import ds_ref
from app.domain.findings.remedies import Remedy, remedy
from app.domain.findings.shell import sh
from app.domain.plugin.daemonset import PluginSpec
from app.domain.snapshot import Finding, Mode, PendingDemand

MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"


def resource_findings(spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    """Per-resource findings of one GPU node (its own resource's rules live in advertised)."""
    found = _stranded(node) + _double_booked(node) + _other_overcommit(node)
    found += _mig_mismatch(spec, node)
    mps = _mps_daemon_missing(spec, node)
    return found + ([mps] if mps is not None else [])


def mps_daemon_missing(node: NodeFacts) -> bool:
    """MPS configured, nothing advertised, and GFD does not mark the node MPS-capable."""
    pod = node.plugin_pod_state
    return (
        node.mode is Mode.MPS
        and node.gpu_capacity_total == 0
        and pod is not None
        and pod.phase == "Running"
        and node.labels.get(MPS_CAPABLE_LABEL) != "true"
    )


def _pods_on(node: NodeFacts) -> str:
    return f"kubectl get pods -A --field-selector {sh('spec.nodeName=' + node.name)}"


def drain_old_pods(node: NodeFacts) -> Remedy:
    """Pods over allocatable started before a config change: drain and reschedule them."""
    return remedy(_pods_on(node), "drain-old-pods")


def restart_after_cause(spec: PluginSpec) -> Remedy:
    return remedy(f"kubectl rollout restart {ds_ref(spec)}", "restart-after-cause")


def _stranded(node: NodeFacts) -> list[Finding]:
    stranded = {n: r.stranded for n, r in node.resources.items() if r.stranded}
    if not stranded or node.unschedulable_reason is None:
        return []
    reason = node.unschedulable_reason
    fix = (
        Remedy(f"kubectl uncordon {sh(node.name)}")
        if reason == "cordoned"
        else remedy(f"kubectl describe node {sh(node.name)}", "node-not-ready")
        if reason == "NotReady"
        else remedy(f"kubectl describe node {sh(node.name)}", "node-tainted")
    )
    return [
        finding(
            "slots-stranded",
            evidence={
                "reason": reason,
                **{name: count for name, count in sorted(stranded.items())},
            },
            words={"free": sum(stranded.values())},
            remedy=fix,
            node=node.name,
        )
    ]


def _family(resource: str) -> str:
    return resource.removesuffix(".shared")


def _double_booked(node: NodeFacts) -> list[Finding]:
    found = []
    for name, state in node.resources.items():
        if state.allocatable or not state.requested:
            continue
        now_as = [
            other
            for other, o in node.resources.items()
            if other != name and o.allocatable and _family(other) == _family(name)
        ]
        if not now_as:
            continue
        pods = ",".join(p.pod for p in node.held_by_resource.get(name, []))
        found.append(
            finding(
                "gpu-double-booked",
                evidence={
                    "resource": name,
                    "requested": state.requested,
                    "allocatable": 0,
                    "advertised_as": now_as[0],
                    "pods": pods,
                },
                remedy=remedy(_pods_on(node), "restart-holders", old=name, new=now_as[0]),
                node=node.name,
            )
        )
    return found


def _other_overcommit(node: NodeFacts) -> list[Finding]:
    found = []
    for name, state in node.resources.items():
        if name == node.resource or not state.allocatable:
            continue
        if state.requested > state.allocatable:
            found.append(
                finding(
                    "requested-above-allocatable",
                    evidence={
                        "requested": state.requested,
                        "allocatable": state.allocatable,
                        "resource": name,
                    },
                    remedy=drain_old_pods(node),
                    node=node.name,
                )
            )
    return found


def _mig_mismatch(spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    found = []
    for name, expected in sorted(node.expected_by_resource.items()):
        if name == node.resource:
            continue
        state = node.resources.get(name)
        allocatable = state.allocatable if state is not None else 0
        if allocatable == expected:
            continue
        found.append(
            finding(
                "allocatable-mismatch",
                evidence={"allocatable": allocatable, "expected_slots": expected, "resource": name},
                remedy=restart_after_cause(spec),
                node=node.name,
            )
        )
    return found


def _mps_daemon_missing(spec: PluginSpec, node: NodeFacts) -> Finding | None:
    if not mps_daemon_missing(node):
        return None
    return finding(
        "mps-daemon-missing",
        evidence={
            "mode": "mps",
            "capacity": node.gpu_capacity_total,
            MPS_CAPABLE_LABEL: node.labels.get(MPS_CAPABLE_LABEL),
        },
        remedy=remedy(
            f"kubectl get node {sh(node.name)} -L {MPS_CAPABLE_LABEL}; "
            f"kubectl -n {sh(spec.namespace)} get daemonset | grep mps-control-daemon",
            "mps-daemon-selects",
            label=MPS_CAPABLE_LABEL,
        ),
        node=node.name,
    )


def demand_findings(demand: list[PendingDemand]) -> list[Finding]:
    """One warning per resource whose pending pods cannot fit now."""
    return [
        finding(
            "gpu-demand-pending",
            evidence={
                "resource": item.resource,
                "pods": item.pods,
                "slots": item.slots,
                "oldest_s": item.oldest_s,
                "reason": item.reason,
                "smallest": item.smallest,
                "largest": item.largest,
            },
            words={"count": item.pods},
            remedy=remedy(
                "kubectl get pods -A --field-selector status.phase=Pending", "pending-events"
            ),
        )
        for item in demand
        if item.reason != "fits"
    ]
