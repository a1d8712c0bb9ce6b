"""One finding per root cause: the findings that follow from another one name it as their cause.

One fault often raises several findings on a node: a plugin container the runtime cannot
create (`visible-device-not-on-node`) is also a pod that is not ready and a node that
advertises nothing. Told apart they read as three faults. Here each such consequence names
its root (`caused_by`, the root's `id`) and the root lists its consequences, so a page shows
one finding with the others folded under it. Nothing is dropped: every finding keeps its
code, severity and evidence (alerts and the JSON API still see each one).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.snapshot import Finding, NodeState

# A consequence's code -> the codes that explain it when raised on the same node (and about
# the same pod where both name one), the likeliest first. Chains end at a root: a finding
# whose causes are all absent. The table is acyclic (tests/domain/test_finding_causes.py).
CAUSES: dict[str, tuple[str, ...]] = {
    "plugin-pod-not-ready": (
        "visible-device-not-on-node",
        "unified-memory-unsupported",
        "runtime-class-missing",
        "plugin-config-rejected",
        "config-label-unknown",
    ),
    "fail-on-init-silent-zero": (
        "visible-device-not-on-node",
        "unified-memory-unsupported",
        "runtime-class-missing",
        "plugin-pod-not-ready",
    ),
    "allocatable-mismatch": (
        "visible-device-not-on-node",
        "unified-memory-unsupported",
        "runtime-class-missing",
        "privileged-visible-devices-ignored",
        "plugin-config-rejected",
        "config-label-unknown",
        "plugin-missing-on-node",
        "advertised-without-plugin",
        "plugin-pod-not-ready",
        "fail-on-init-silent-zero",
    ),
    "requested-above-allocatable": (
        "visible-device-not-on-node",
        "unified-memory-unsupported",
        "runtime-class-missing",
        "plugin-missing-on-node",
        "advertised-without-plugin",
        "plugin-pod-not-ready",
        "fail-on-init-silent-zero",
        "unhealthy-devices",
        "allocatable-mismatch",
    ),
    "pod-process-without-slot": ("pod-sets-visible-devices",),
}


def _related(cause: Finding, consequence: Finding) -> bool:
    """Same node, and the same pod where both name one."""
    return cause.pod is None or consequence.pod is None or cause.pod == consequence.pod


# A node's findings by code: a cause is looked up among its code's findings only, so a node
# with hundreds of pod findings costs one pass, not one per pair.
ByCode = dict[str, list[Finding]]


def _direct_cause(item: Finding, by_code: ByCode) -> Finding | None:
    """The likeliest finding of the same node (`by_code`) that explains `item`."""
    for code in CAUSES.get(item.code, ()):
        for peer in by_code.get(code, ()):
            if peer is not item and _related(peer, item):
                return peer
    return None


def _root(item: Finding, by_code: ByCode) -> Finding | None:
    """The finding at the end of `item`'s chain of causes, or None when nothing explains it."""
    root, seen = None, {id(item)}
    cause = _direct_cause(item, by_code)
    while cause is not None and id(cause) not in seen:
        root = cause
        seen.add(id(cause))
        cause = _direct_cause(cause, by_code)
    return root


def _node_links(peers: Sequence[Finding]) -> dict[int, Finding]:
    """The findings of one node that change (by `id()` of the original): consequences with
    `caused_by` set, roots with their `consequences`."""
    by_code: ByCode = {}
    for item in peers:
        by_code.setdefault(item.code, []).append(item)
    roots: dict[int, tuple[Finding, list[Finding]]] = {}
    for item in peers:
        if item.code not in CAUSES:
            continue
        root = _root(item, by_code)
        if root is not None:
            roots.setdefault(id(root), (root, []))[1].append(item)
    changed: dict[int, Finding] = {}
    for root, consequences in roots.values():
        changed[id(root)] = root.model_copy(
            update={"consequences": tuple(c.id for c in consequences)}
        )
        for item in consequences:
            changed[id(item)] = item.model_copy(update={"caused_by": root.id})
    return changed


def link_causes(
    findings: Sequence[Finding], nodes: Sequence[NodeState]
) -> tuple[list[Finding], list[NodeState]]:
    """The findings and node states with causes linked, in their order.

    Only node findings link (a cluster-wide one has no node to share). A finding that does
    not link stays the same object, and so does a node state none of whose findings link.
    """
    by_node: dict[str, list[Finding]] = {}
    for item in findings:
        if item.node is not None:
            by_node.setdefault(item.node, []).append(item)
    changed: dict[int, Finding] = {}
    for peers in by_node.values():
        if len(peers) > 1 and any(p.code in CAUSES for p in peers):
            changed.update(_node_links(peers))
    if not changed:
        return list(findings), list(nodes)
    touched = {item.node for item in findings if id(item) in changed}
    return [changed.get(id(item), item) for item in findings], [
        node.model_copy(update={"findings": [changed.get(id(f), f) for f in node.findings]})
        if node.name in touched
        else node
        for node in nodes
    ]
