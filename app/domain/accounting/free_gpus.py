"""Free GPUs the way people ask for them: whole GPUs of a model, apart from shares of one.

"Where can I get a GPU of model X" is not a mixed slot count. A GPU is free and whole when
it is advertised (or published by a DRA driver) on a schedulable node as one slot and no
pod holds it. A time-slice, an MPS share or a MIG slice is a share of a GPU: free shares
are counted apart, per model. A GPU whose memory is mostly held by host processes is not
a free GPU whatever Kubernetes says; it is listed apart, with the memory that holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.domain.snapshot import GpuState, NodeState

HOST_HELD_SHARE = 0.5  # host processes use more than half of the GPU's memory
_FREEABLE_ROLES = ("advertised", "dra")


@dataclass(frozen=True)
class HostHeldGpu:
    """A GPU Kubernetes counts as free whose memory host processes mostly hold."""

    node: str
    index: int
    memory_host_mib: int
    memory_total_mib: int


@dataclass
class FreeByModel:
    """Free whole GPUs and free shares of one GPU model, and where they are."""

    model: str
    whole: int = 0
    shares: int = 0
    nodes: list[str] = field(default_factory=list)
    host_held: list[HostHeldGpu] = field(default_factory=list)


def host_held(gpu: GpuState) -> bool:
    """Host processes hold most of this GPU's memory."""
    total = gpu.memory_total_mib or 0
    return total > 0 and gpu.memory_host_mib > total * HOST_HELD_SHARE


@dataclass
class _NodeFree:
    whole: dict[str, int] = field(default_factory=dict)  # by model
    shares: dict[str, int] = field(default_factory=dict)
    host_held: list[tuple[str, HostHeldGpu]] = field(default_factory=list)


def _node_free(node: NodeState, *, model: str = "") -> _NodeFree:
    """What is free on one node, capped by what the scheduler would still place there.

    Per GPU: free slots (slots - held); MIG slices are shares of their own resource. Each
    resource's count is capped by its schedulable free (allocatable - requested), so a GPU
    the ledger shows empty while Kubernetes has nothing left is not free.
    """
    out = _NodeFree()
    if not node.gpu_node or not node.schedulable:
        return out
    budget = {name: state.free for name, state in node.resources.items()}
    for gpu in sorted(node.gpus, key=lambda g: g.index):
        if gpu.role not in _FREEABLE_ROLES or (model and model.lower() not in gpu.name.lower()):
            continue
        if gpu.role == "dra":
            _dra_free(node, gpu, out)
            continue
        if gpu.mig_devices:
            for device in gpu.mig_devices:
                free = min(
                    max(device.slots - device.held_slots, 0), budget.get(device.resource or "", 0)
                )
                if free:
                    budget[device.resource or ""] -= free
                    out.shares[gpu.name] = out.shares.get(gpu.name, 0) + free
            continue
        free = min(max(gpu.slots - gpu.held_slots, 0), budget.get(node.resource, 0))
        if not free:
            continue
        if host_held(gpu):
            total = gpu.memory_total_mib or 0
            held = HostHeldGpu(node.name, gpu.index, gpu.memory_host_mib, total)
            out.host_held.append((gpu.name, held))
            continue
        budget[node.resource] -= free
        bucket = out.whole if gpu.slots == 1 and gpu.held_slots == 0 else out.shares
        bucket[gpu.name] = bucket.get(gpu.name, 0) + free
    return out


def _dra_free(node: NodeState, gpu: GpuState, out: _NodeFree) -> None:
    """A GPU a DRA driver publishes: whole when no claim holds any of its devices, else its
    unclaimed MIG devices are shares."""
    if not gpu.dra_devices:
        return
    unclaimed = [device for device in gpu.dra_devices if not device.claims]
    if not unclaimed:
        return
    if host_held(gpu):
        total = gpu.memory_total_mib or 0
        out.host_held.append(
            (gpu.name, HostHeldGpu(node.name, gpu.index, gpu.memory_host_mib, total))
        )
        return
    if len(unclaimed) == len(gpu.dra_devices) and not gpu.holders:
        out.whole[gpu.name] = out.whole.get(gpu.name, 0) + 1
    else:
        out.shares[gpu.name] = out.shares.get(gpu.name, 0) + len(unclaimed)


def node_free(node: NodeState, *, model: str = "") -> tuple[int, int]:
    """(free whole GPUs, free shares) on one node, of models containing `model`."""
    found = _node_free(node, model=model)
    return sum(found.whole.values()), sum(found.shares.values())


NodeFreeMemo = dict[str, tuple[NodeState, _NodeFree]]  # by node name: its state, its free


def free_by_model(
    nodes: Iterable[NodeState], *, memo: NodeFreeMemo | None = None
) -> list[FreeByModel]:
    """Per GPU model (sorted by name): free whole GPUs, free shares, nodes, host-held GPUs.

    `memo` (kept by the caller) holds each node's free GPUs of the call before: a node
    whose state is the very same object is not looked at again (at 10,000 nodes looking
    at every GPU of every node was most of a summary's rendering). It is left holding
    this call's nodes."""
    found: dict[str, FreeByModel] = {}
    kept: NodeFreeMemo = {}
    for node in nodes:
        before = memo.get(node.name) if memo is not None else None
        free = before[1] if before is not None and before[0] is node else _node_free(node)
        kept[node.name] = (node, free)
        for name, count in free.whole.items():
            entry = found.setdefault(name, FreeByModel(name))
            entry.whole += count
        for name, count in free.shares.items():
            found.setdefault(name, FreeByModel(name)).shares += count
        for name in {*free.whole, *free.shares}:
            found[name].nodes.append(node.name)
        for name, held in free.host_held:
            found.setdefault(name, FreeByModel(name)).host_held.append(held)
    if memo is not None:
        memo.clear()
        memo.update(kept)
    return [found[name] for name in sorted(found)]


def has_free(node: NodeState, *, model: str = "") -> bool:
    """The overview's "only with free GPUs" filter: what the headline counts on this node."""
    return any(node_free(node, model=model))


def total_free(models: Sequence[FreeByModel]) -> tuple[int, int, int]:
    """(whole GPUs, shares, host-held GPUs) over every model."""
    return (
        sum(m.whole for m in models),
        sum(m.shares for m in models),
        sum(len(m.host_held) for m in models),
    )
