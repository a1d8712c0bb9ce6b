"""A pod still holding a device ID of the mode before a switch, as the real kubelet keeps it.

A mode switch restarts the plugin, not the pods: after basic -> time-slicing a running pod
keeps its whole-GPU ID (`GPU-...`) while the plugin now hands that GPU's replicas
(`GPU-...::n`) to other pods, and after time-slicing -> basic it keeps a replica ID while the
whole GPU goes to someone else. The kubelet's PodResources (through the agent) shows it.
"""

from __future__ import annotations

from app.domain.accounting.facts import NodeFacts
from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.snapshot import EvidenceValue, Finding, Mode

_SHARED = {Mode.TIME_SLICING: True, Mode.MPS: True, Mode.BASIC: False}


def stale_id_findings(node: NodeFacts) -> list[Finding]:
    """One finding per pod container whose device IDs do not fit the node's current mode."""
    shared = _SHARED.get(node.mode)
    if shared is None or node.report is None or node.report.report.assignments is None:
        return []
    found = []
    for item in node.report.report.assignments:
        stale = sorted(d for d in item.device_ids if ("::" in d) != shared)
        if item.resource != node.resource or not stale:
            continue
        key = f"{item.namespace}/{item.pod}"
        evidence: dict[str, EvidenceValue] = {
            "pod": key,
            "container": item.container,
            "resource": item.resource,
            "device_ids": ",".join(stale),
            "mode": str(node.mode),
        }
        found.append(
            finding(
                "device-id-from-before-switch",
                evidence=evidence,
                remedy=remedy(
                    f"kubectl -n {sh(item.namespace)} delete pod {sh(item.pod)}",
                    "recreate-on-current-mode",
                ),
                node=node.name,
                words={"variant": None if shared else "replica", "device_id": stale[0]},
                gpu_uuid=stale[0].split("::", 1)[0],
                pod=key,
            )
        )
    return found
