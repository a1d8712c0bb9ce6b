"""Free GPUs the way people ask for them: whole GPUs of a model, apart from shares of one.

"Where can I get a GPU of model X" is not a mixed slot count. A GPU is free and whole when
it is advertised (or published by a DRA driver) on a schedulable node as one slot and no
pod holds it. A time-slice, an MPS share or a MIG slice is a share of a GPU: free shares
are counted apart, per model. A GPU whose memory is mostly held by host processes is not
a free GPU whatever Kubernetes says; it is listed apart, with the memory that holds it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from app.domain.sequences import replaced_in_place
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


def _models(free: _NodeFree) -> set[str]:
    """The models a node lists: free whole GPUs or shares of them, or host-held ones."""
    return {*free.whole, *free.shares, *(name for name, _ in free.host_held)}


def _same_free_inputs(before: NodeState, node: NodeState) -> bool:
    """Whether `node` reads as `before` for _node_free: the very GPU list and resources
    (states are immutable), the same flags and resource name."""
    return (
        before.gpus is node.gpus
        and before.resources is node.resources
        and before.gpu_node == node.gpu_node
        and before.schedulable == node.schedulable
        and before.resource == node.resource
    )


class FreeMemo:
    """What free_by_model keeps from one call to the next: each node's free GPUs, at its
    position in the node list, and their sums per model, kept by difference.

    At 10,000 nodes adding every node's free GPUs up was most of a summary's rendering, on
    the path of every change to the summary; now only the node states the list replaced
    (by identity, at the same position, with the same name) are looked at again, and a
    model's node list is gathered again only when a node entered or left it.
    """

    def __init__(self) -> None:
        self._nodes: Sequence[NodeState] = ()
        self._frees: list[_NodeFree] = []
        self._whole: Counter[str] = Counter()
        self._shares: Counter[str] = Counter()
        self._members: Counter[str] = Counter()  # nodes listing the model (see _models)
        self._listed: dict[str, tuple[list[str], list[HostHeldGpu]]] = {}  # nodes, host-held

    def free(self, nodes: Sequence[NodeState]) -> list[FreeByModel]:
        """free_by_model(nodes), from what the call before left."""
        before = self._nodes
        replaced = replaced_in_place(before, nodes, key=attrgetter("name"))
        if replaced is None:
            self._whole, self._shares, self._members = Counter(), Counter(), Counter()
            self._listed = {}
            self._frees = [_node_free(node) for node in nodes]
            for free in self._frees:
                self._add(free, 1)
            again = set(self._members)
        else:
            again = set()
            for i in replaced:
                if _same_free_inputs(before[i], nodes[i]):
                    continue  # e.g. a new agent age: the node's free GPUs are as they were
                old, new = self._frees[i], _node_free(nodes[i])
                if old != new:
                    self._add(old, -1)
                    self._add(new, 1)
                    self._frees[i] = new
                    again |= _models(old) | _models(new)
        self._nodes = nodes
        for model in again:
            self._gather(model)
        return [
            FreeByModel(model, self._whole[model], self._shares[model], *self._listed[model])
            for model in sorted(self._members)
        ]

    def _add(self, free: _NodeFree, sign: int) -> None:
        for model, count in free.whole.items():
            self._whole[model] += sign * count
        for model, count in free.shares.items():
            self._shares[model] += sign * count
        for model in _models(free):
            self._members[model] += sign
            if not self._members[model]:
                del self._members[model]

    def _gather(self, model: str) -> None:
        """The model's nodes with free GPUs and its host-held GPUs, in node order."""
        if model not in self._members:
            self._listed.pop(model, None)
            return
        pairs = zip(self._nodes, self._frees, strict=True)
        self._listed[model] = (
            [node.name for node, free in pairs if model in free.whole or model in free.shares],
            [held for free in self._frees for name, held in free.host_held if name == model],
        )


def free_by_model(nodes: Sequence[NodeState], *, memo: FreeMemo | None = None) -> list[FreeByModel]:
    """Per GPU model (sorted by name): free whole GPUs, free shares, nodes, host-held GPUs.

    `memo` (kept by the caller) saves looking at the nodes that did not change since the
    call before (see FreeMemo); the result is the same without it."""
    return (memo if memo is not None else FreeMemo()).free(nodes)


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
