"""Which nodes' GPUs GPU Slots may change, decided before any form is shown.

Only the configured plugin install (its shared DaemonSet, or a node's own DaemonSet made by
a split) is GPU Slots' to change. A node another install runs, an Operator-managed one and
a node whose GPUs a DRA driver hands out are refused up front, with the object to change
instead; a GPU a DRA claim holds is never given to the device plugin. Pure: the node's
state from the snapshot in, a refusal (or None) out; and the node's GPUs as a split plans
them (who runs what on each).
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.changes.models import PlanRefused, RefusalCode
from app.domain.changes.split_models import NodeGpu, own_name
from app.domain.snapshot import NodeState


def split_refusal(node: NodeState, *, target: str) -> PlanRefused | None:
    """Why `node`'s GPUs cannot be changed here (None: they can); `target` is namespace/name.

    The refusal's `details` hold one line: what to change instead (none for a DRA node: the
    web layer words it, `gpus_instead_dra-node`).
    """
    config = node.config
    owner = config.daemonset if config is not None else None
    if node.allocation == "dra":
        return PlanRefused(RefusalCode.DRA_NODE, "dra-node", node=node.name)
    if config is not None and config.managed_by == "gpu-operator":
        return PlanRefused(
            RefusalCode.OPERATOR_MANAGED,
            "operator-managed-node",
            details=("the ClusterPolicy's spec.devicePlugin (config, env)",),
            node=node.name,
            daemonset=owner,
        )
    namespace, _, name = target.partition("/")
    mine = (target, f"{namespace}/{own_name(name, node.name)}")
    if owner is not None and owner not in mine:
        instead = config.change_with if config is not None and config.change_with else None
        return PlanRefused(
            RefusalCode.OTHER_INSTALL,
            "other-plugin-install",
            node=node.name,
            daemonset=owner,
            target=target,
            details=(instead,) if instead else (),
        )
    return None


def dra_held(node: NodeState, chosen: Iterable[str]) -> PlanRefused | None:
    """A refusal when a GPU chosen for the device plugin is held by a DRA claim."""
    held = sorted(
        gpu.uuid
        for gpu in node.gpus
        if gpu.uuid in set(chosen)
        and (gpu.role == "dra" or any(h.source == "dra" for h in gpu.holders))
    )
    if not held:
        return None
    return PlanRefused(
        RefusalCode.DRA_HELD_GPU,
        "dra-held-gpu",
        details=tuple(held),
        gpus=", ".join(held),
        node=node.name,
        count=len(held),
    )


def node_gpus(state: NodeState) -> list[NodeGpu]:
    """The node's GPUs as the agent reports them, with who runs what on each."""
    gpus: list[NodeGpu] = []
    for gpu in state.gpus:
        host = tuple(
            f"pid {p.pid}"
            + (f" {p.user}" if p.user else "")
            + (f": {p.command}" if p.command else "")
            for p in gpu.processes
            if p.owner == "host"
        )
        pods = {h.pod for h in gpu.holders} | {
            p.pod for p in gpu.processes if p.owner == "pod" and p.pod
        }
        gpus.append(
            NodeGpu(gpu.uuid, gpu.index, gpu.name, gpu.memory_total_mib, host, tuple(sorted(pods)))
        )
    return gpus
