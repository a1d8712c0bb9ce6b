"""DRA findings across the cluster: claims on lost nodes, unsatisfiable claims, mapped names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.domain.accounting.facts import ClusterFacts
from app.domain.accounting.pods import TERMINAL_PHASES, is_ready
from app.domain.cluster import Manifest
from app.domain.dra.inventory import DraView, pod_claims
from app.domain.dra.ledger import schedulable_nodes
from app.domain.dra.objects import Claim, Request
from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.snapshot import Finding

LISTED_PODS = 10


def dra_cluster_findings(view: DraView | None, facts: ClusterFacts) -> list[Finding]:
    if view is None:
        return []
    nodes = {str((n.get("metadata") or {}).get("name", "")): n for n in facts.state.nodes}
    waiting = pod_claims(facts.pods_by_uid)
    found = _lost_nodes(view, nodes)
    found += _unsatisfiable(view, nodes, waiting)
    found += _extended(view, facts)
    return found


def _lost_nodes(view: DraView, nodes: Mapping[str, Manifest]) -> list[Finding]:
    found = []
    for claim in view.claims:
        node = view.claim_node(claim) if claim.allocated else None
        if node is None:
            continue
        manifest = nodes.get(node)
        if manifest is not None and is_ready(manifest):
            continue
        state = "gone" if manifest is None else "NotReady"
        found.append(
            finding(
                "dra-claim-on-lost-node",
                evidence={
                    "claim": claim.key,
                    "node": node,
                    "node_state": state,
                    "devices": ",".join(r.device for r in claim.results),
                    "pods": ",".join(claim.reserved_for) or None,
                },
                remedy=(
                    remedy(
                        f"kubectl -n {sh(claim.namespace)} delete pod "
                        + " ".join(sh(p.rpartition("/")[2]) for p in claim.reserved_for),
                        "dra-recreate-pods",
                    )
                    if claim.reserved_for
                    else f"kubectl -n {sh(claim.namespace)} delete resourceclaim {sh(claim.name)}"
                ),
                node=node,
                pod=claim.reserved_for[0] if claim.reserved_for else None,
            )
        )
    return found


def unsatisfiable_reason(
    view: DraView, claim: Claim, usable: set[str]
) -> tuple[str, Request, int, int, int] | None:
    """Why no node can satisfy this claim now, or None.

    The reason is a code (class-missing, unpublished, too-large, all-allocated, unusable,
    split), with the request, the matching and free devices and the largest node's count.
    """
    free_by_node: dict[str, int] = {}
    for request in claim.requests:
        info = view.classes.get(request.device_class)
        if info is None:
            return ("class-missing", request, 0, 0, 0)
        matching = [d for d in view.devices.values() if info.selects(d)]
        if not matching:
            return ("unpublished", request, 0, 0, 0)
        free = [d for d in matching if not view.claims_by_device.get(d.key)]
        usable_free = [d for d in free if d.node in usable]
        per_node: dict[str, int] = {}
        for device in usable_free:
            per_node[device.node or ""] = per_node.get(device.node or "", 0) + 1
        needed = max(request.count, 1)
        if max(per_node.values(), default=0) >= needed:
            for node, count in per_node.items():
                free_by_node[node] = min(free_by_node.get(node, count), count)
            continue
        largest: dict[str, int] = {}
        for device in matching:
            largest[device.node or ""] = largest.get(device.node or "", 0) + 1
        if max(largest.values()) < needed:
            reason = "too-large"
        elif not free:
            reason = "all-allocated"
        elif not usable_free:
            reason = "unusable"
        else:
            reason = "split"
        return (reason, request, len(matching), len(free), max(largest.values()))
    return None


def _unsatisfiable(
    view: DraView, nodes: Mapping[str, Manifest], waiting: Mapping[str, Sequence[str]]
) -> list[Finding]:
    usable = schedulable_nodes(list(nodes.values()))
    found = []
    for claim in view.claims:
        if claim.allocated or not claim.requests:
            continue
        why = unsatisfiable_reason(view, claim, usable)
        if why is None:
            continue
        reason, request, matching, free, largest = why
        pods = sorted(waiting.get(claim.key, []))
        found.append(
            finding(
                "dra-claim-unsatisfiable",
                evidence={
                    "claim": claim.key,
                    "request": request.name,
                    "device_class": request.device_class,
                    "count": request.count,
                    "matching_devices": matching,
                    "free_devices": free,
                    "reason": reason,
                    "pods": ",".join(pods) or None,
                },
                words={
                    "variant": None if reason == "split" else reason,
                    "needed": max(request.count, 1),
                    "largest": largest,
                },
                remedy=remedy(
                    f"kubectl -n {sh(claim.namespace)} describe resourceclaim {sh(claim.name)}",
                    "dra-free-device",
                ),
                pod=pods[0] if pods else None,
            )
        )
    return found


def _extended(view: DraView, facts: ClusterFacts) -> list[Finding]:
    found = []
    for resource, device_class in sorted(view.extended.items()):
        requesting = [
            p
            for p in facts.pod_facts.values()
            if p.slots.get(resource, 0) > 0 and p.phase not in TERMINAL_PHASES
        ]
        if not requesting:
            continue
        with_claims, to_claims = [], []
        for pod in requesting:
            status = facts.pods_by_uid[pod.uid].get("status") or {}
            if (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"):
                with_claims.append(pod.key)
            elif pod.node is None:
                to_claims.append(pod.key)
        to_claims.sort()
        listed = ",".join(to_claims[:LISTED_PODS])
        if len(to_claims) > LISTED_PODS:
            listed += " ..."
        found.append(
            finding(
                "dra-extended-resource-mapped",
                evidence={
                    "resource": resource,
                    "device_class": device_class,
                    "pods_requesting": len(requesting),
                    "pods_with_claims": len(with_claims),
                    "pods_on_plugin_slots": len(requesting) - len(with_claims) - len(to_claims),
                    "pending_pods": len(to_claims),
                    "pending_pods_listed": listed or None,
                },
                remedy=remedy(
                    f"kubectl get deviceclass {sh(device_class)} -o yaml",
                    "dra-extended-resource",
                    resource=resource,
                ),
            )
        )
    return found
