"""DRA findings about one node and its GPUs; the rules shared with the plugin are in gpu.py."""

from __future__ import annotations

from app.domain.accounting.facts import ClusterFacts, NodeFacts
from app.domain.accounting.ledger.models import GpuFacts
from app.domain.dra.inventory import DraView
from app.domain.dra.ledger import PLUGIN_ONLY_CODES, node_allocation
from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.snapshot import Finding

_RUNNING = "Running"


def dra_node_findings(
    view: DraView | None, facts: ClusterFacts, node: NodeFacts, own: list[Finding]
) -> list[Finding]:
    """The node's plugin and GPU findings, corrected for DRA, plus the DRA rules."""
    allocation = node_allocation(view, node)
    found = own
    if allocation == "dra":
        found = [f for f in own if f.code not in PLUGIN_ONLY_CODES]
    if view is None or allocation not in ("dra", "both"):
        return found
    if allocation == "both":
        found.append(_both(view, node))
    if node.has_gpu_data and node.agent is not None and node.agent.fresh:
        found += _agent_disagrees(view, node, only_dra=allocation == "dra")
    if node.agent is not None and node.agent.fresh:
        for gpu in node.gpus:
            if "dra" in gpu.handed_by:
                found += _idle(view, facts, node, gpu)
    return found


def _both(view: DraView, node: NodeFacts) -> Finding:
    drivers = sorted(view.drivers_on(node.name))
    return finding(
        "dra-and-device-plugin-on-node",
        evidence={
            "dra_drivers": ",".join(drivers),
            "dra_devices": len(view.devices_on(node.name)),
            "plugin_pod": node.plugin_pod_state.name if node.plugin_pod_state else None,
            "plugin_capacity": node.capacity,
        },
        remedy=remedy("", "dra-one-per-node", node=node.name),
        node=node.name,
    )


def _agent_disagrees(view: DraView, node: NodeFacts, *, only_dra: bool) -> list[Finding]:
    found = []
    seen = {g.uuid for g in node.gpus}
    devices = view.devices_on(node.name)
    for device in devices:
        if device.gpu_uuid is None or device.gpu_uuid in seen:
            continue
        found.append(
            finding(
                "dra-device-not-seen-by-agent",
                evidence={
                    "driver": device.driver,
                    "pool": device.pool,
                    "device": device.name,
                    "uuid": device.uuid,
                    "parent_uuid": device.parent_uuid,
                    "agent_gpus": len(seen),
                },
                remedy=remedy("nvidia-smi -L", "dra-gpu-lost", node=node.name),
                node=node.name,
                gpu_uuid=device.gpu_uuid,
            )
        )
    if only_dra:
        published = {d.gpu_uuid for d in devices}
        for gpu in node.gpus:
            if gpu.uuid in published:
                continue
            found.append(
                finding(
                    "dra-gpu-not-published",
                    evidence={
                        "gpu_index": gpu.reading.index,
                        "uuid": gpu.uuid,
                        "slice_devices": len(devices),
                        "mig_mode": gpu.reading.mig_mode,
                    },
                    remedy=remedy(
                        "kubectl get resourceslices --field-selector "
                        f"{sh('spec.nodeName=' + node.name)} -o yaml",
                        "dra-gpu-unpublished",
                    ),
                    node=node.name,
                    gpu_uuid=gpu.uuid,
                )
            )
    return found


def _running(view: DraView, facts: ClusterFacts, pod: str) -> bool:
    known = facts.pod_facts.get(view.uid_by_pod.get(pod, ""))
    return known is not None and known.key == pod and known.phase == _RUNNING


def _idle(view: DraView, facts: ClusterFacts, node: NodeFacts, gpu: GpuFacts) -> list[Finding]:
    found = []
    running_here = {p.pod for p in gpu.processes if p.owner == "pod" and p.pod}
    claims: dict[str, list[str]] = {}
    for holder in gpu.holders:
        if holder.source == "dra" and holder.claim:
            claims.setdefault(holder.claim, []).append(holder.pod)
    for claim, pods in sorted(claims.items()):
        if any(p in running_here for p in pods):
            continue
        running = [p for p in pods if _running(view, facts, p)]
        if not running:
            continue
        namespace, _, name = claim.partition("/")
        found.append(
            finding(
                "dra-claim-idle",
                evidence={
                    "claim": claim,
                    "pods": ",".join(sorted(pods)),
                    "gpu_index": gpu.reading.index,
                    "memory_used_mib": gpu.reading.memory_used_mib,
                },
                remedy=remedy(
                    f"kubectl -n {sh(namespace)} describe resourceclaim {sh(name)}",
                    "dra-delete-idle",
                ),
                node=node.name,
                gpu_uuid=gpu.uuid,
            )
        )
    return found
