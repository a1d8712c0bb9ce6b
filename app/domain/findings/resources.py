"""Findings over the per-resource ledger: stranded slots, overcommit and double booking per
resource, MIG resources short of their devices, a missing MPS daemon, pending demand."""

from __future__ import annotations

from app.domain.accounting.facts import NodeFacts
from app.domain.findings.catalogue import finding
from app.domain.findings.cluster import ds_ref
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


def _stranded(node: NodeFacts) -> list[Finding]:
    stranded = {n: r.stranded for n, r in node.resources.items() if r.stranded}
    if not stranded or node.unschedulable_reason is None:
        return []
    reason = node.unschedulable_reason
    remedy = (
        f"kubectl uncordon {sh(node.name)}"
        if reason == "cordoned"
        else f"kubectl describe node {sh(node.name)}  # fix the Ready condition of the node"
        if reason == "NotReady"
        else f"kubectl describe node {sh(node.name)}  # then remove the taint or tolerate it"
    )
    return [
        finding(
            "slots-stranded",
            evidence={
                "reason": reason,
                **{name: count for name, count in sorted(stranded.items())},
            },
            words={"free": sum(stranded.values())},
            remedy=remedy,
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
                remedy=(
                    f"kubectl get pods -A --field-selector {sh('spec.nodeName=' + node.name)}  "
                    f"# restart the pods holding {name} so they request {now_as[0]}"
                ),
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
                    remedy=(
                        f"kubectl get pods -A --field-selector {sh('spec.nodeName=' + node.name)}  "
                        "# drain and reschedule the pods started before the config change"
                    ),
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
                remedy=f"kubectl rollout restart {ds_ref(spec)}  # after fixing the cause above",
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
        remedy=(
            f"kubectl get node {sh(node.name)} -L {MPS_CAPABLE_LABEL}  # the MPS control daemon "
            "DaemonSet selects nodes labelled true (set by GFD from the same config); check: "
            f"kubectl -n {sh(spec.namespace)} get daemonset | grep mps-control-daemon"
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
            remedy=(
                "kubectl get pods -A --field-selector status.phase=Pending  "
                "# then: kubectl describe pod <pod> for the scheduler's events"
            ),
        )
        for item in demand
        if item.reason != "fits"
    ]
