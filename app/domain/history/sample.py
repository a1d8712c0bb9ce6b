"""One sample of the published snapshot: what each team held, of which GPUs, and the GPUs.

A holding stands for a physical share of GPUs (app.domain.usage.shares): 1 for a whole GPU,
1/replicas for a time-slice, the slice's share for MIG, the annotation's share for a
fraction (its KAI reservation pod keeps only what no fraction holds), the device for DRA.
A node's holdings never add up to more GPUs than the node has: where they would (fractions
asking more than a GPU, an accounting the agent contradicts), they are scaled down to them,
so GPU-hours never exceed physical GPU-hours.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from itertools import chain

from app.domain.accounting.fractions import RESERVATION_NAMESPACES
from app.domain.accounting.pods import pod_key
from app.domain.cluster import Manifest
from app.domain.history.records import HeldSlots
from app.domain.sequences import same_objects
from app.domain.snapshot import GpuState, NodeState, SlotHolder, Snapshot
from app.domain.usage.holders import owner_of
from app.domain.usage.shares import Held, held_on_node


@dataclass(frozen=True, slots=True)
class Holding:
    """What one namespace/owner held on one node at a sample, in physical GPUs.

    `used_share` is held by pods with a process on their GPUs, `idle_share` by pods with
    none, both as the node's fresh agent saw; neither where no fresh agent reports.
    """

    namespace: str
    owner: str
    node: str
    share: float
    used_share: float
    idle_share: float
    slots: tuple[tuple[str, int], ...]  # per resource, kept apart


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuHold(HeldSlots):
    """Slots a pod holds on `node` at a sample."""

    node: str


@dataclass(frozen=True, slots=True)
class GpuSeen:
    """A physical GPU at a sample and the agent's utilisation of it (None: not read)."""

    node: str
    gpu_uuid: str
    gpu_index: int
    utilization_pct: int | None
    mode: str
    replicas: int
    config: str


@dataclass(frozen=True, slots=True)
class NodePart:
    """One node's share of a sample, and what it was taken from."""

    node: NodeState
    pods: tuple[str, ...]  # the pods holding on it, whose manifests name their owners
    manifests: tuple[Manifest | None, ...]
    holdings: tuple[Holding, ...]
    holds: tuple[GpuHold, ...]
    gpus: tuple[GpuSeen, ...]


@dataclass(frozen=True, slots=True)
class Sample:
    at: datetime
    holdings: tuple[Holding, ...]
    holds: tuple[GpuHold, ...]
    gpus: tuple[GpuSeen, ...]
    # set by `of_parts` alone: the nodes' parts the items above are made of, in order, each
    # the same object while its node is unchanged (a store compares parts rather than
    # items); a copy (dataclasses.replace) has none, so a store compares its items
    nodes: tuple[NodePart, ...] = field(default=(), init=False, compare=False, repr=False)

    @classmethod
    def of_parts(cls, at: datetime, parts: tuple[NodePart, ...]) -> Sample:
        """The sample made of the nodes' parts, which it keeps."""
        sample = cls(
            at,
            tuple(chain.from_iterable(part.holdings for part in parts)),
            tuple(chain.from_iterable(part.holds for part in parts)),
            tuple(chain.from_iterable(part.gpus for part in parts)),
        )
        object.__setattr__(sample, "nodes", parts)  # frozen: set once, here
        return sample


def sample_of(snapshot: Snapshot, pods: Sequence[Manifest], *, at: datetime) -> Sample:
    """The sample at `at` of the published snapshot; `pods` (cached manifests) name owners."""
    return Sampler().sample(snapshot, pods, at=at)


class Sampler:
    """Takes the samples of successive snapshots, each costing what changed since the last.

    The snapshot engine keeps an unchanged node's NodeState the very same object from one
    build to the next (docs/decisions/0005-*.md), and the pod cache an unchanged pod's manifest:
    a node's part of the sample is kept while both are, and taken again otherwise. The
    samples are the ones `sample_of` takes, their unchanged parts the same objects.
    """

    def __init__(self) -> None:
        self._parts: dict[str, NodePart] = {}
        self._pods: Sequence[Manifest] = ()
        self._manifests: dict[str, Manifest] = {}

    def sample(self, snapshot: Snapshot, pods: Sequence[Manifest], *, at: datetime) -> Sample:
        if not same_objects(self._pods, pods):
            self._manifests = {pod_key(pod): pod for pod in pods}
            self._pods = list(pods)
        parts = tuple(self._part(node) for node in snapshot.nodes)
        self._parts = {part.node.name: part for part in parts}
        return Sample.of_parts(at, parts)

    def _part(self, node: NodeState) -> NodePart:
        kept = self._parts.get(node.name)
        if kept is not None and kept.node is node:
            manifests = tuple(map(self._manifests.get, kept.pods))
            if same_objects(kept.manifests, manifests):
                return kept
            return replace(
                kept,
                manifests=manifests,
                holdings=tuple(_holdings(node, held_on_node(node), self._manifests)),
            )
        held = held_on_node(node)
        config = _config_source(node)
        return NodePart(
            node,
            pods=tuple(held),
            manifests=tuple(map(self._manifests.get, held)),
            holdings=tuple(_holdings(node, held, self._manifests)),
            holds=tuple(hold for gpu in node.gpus for hold in _gpu_holds(node, gpu)),
            gpus=tuple(
                GpuSeen(
                    node.name,
                    gpu.uuid,
                    gpu.index,
                    gpu.utilization_pct,
                    mode=node.mode.value,
                    replicas=node.replicas,
                    config=config,
                )
                for gpu in node.gpus
            ),
        )


def _holdings(
    node: NodeState, held: Mapping[str, Held], manifests: Mapping[str, Manifest]
) -> list[Holding]:
    """The node's holdings per namespace and owner, scaled to its physical GPUs at most."""
    shares = _physical_shares(held)
    physical = max(len(node.gpus), node.physical_gpus or 0)
    total = sum(shares.values())
    scale = physical / total if total > physical else 1.0
    watched = node.agent is not None and node.agent.fresh
    found: dict[tuple[str, str], _Sum] = {}
    for pod, item in held.items():
        namespace = sys.intern(pod.partition("/")[0])  # one string per namespace, kept
        bare = {"metadata": {"namespace": namespace, "name": pod.partition("/")[2]}}
        owner = owner_of(manifests.get(pod) or bare)
        found.setdefault((namespace, owner), _Sum()).add(
            item, share=shares[pod] * scale, watched=watched
        )
    return [
        Holding(
            namespace,
            owner,
            node.name,
            share=part.share,
            used_share=part.used,
            idle_share=part.idle,
            slots=_slot_set(tuple(sorted(part.slots.items()))),
        )
        for (namespace, owner), part in sorted(found.items())
        if part.share or part.slots
    ]


@lru_cache(maxsize=1024)
def _slot_set(slots: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """One object for equal slot sets: a sample keeps a holding per namespace, owner and
    node, and most of them hold the same few (at 10,000 nodes, 280,000 holdings)."""
    return slots


@dataclass
class _Sum:
    share: float = 0.0
    used: float = 0.0
    idle: float = 0.0
    slots: dict[str, int] = field(default_factory=dict)

    def add(self, held: Held, *, share: float, watched: bool) -> None:
        self.share += share
        if watched and held.processes:
            self.used += share
        elif watched:
            self.idle += share
        for resource, count in held.slots.items():
            self.slots[resource] = self.slots.get(resource, 0) + count


def _physical_shares(held: Mapping[str, Held]) -> dict[str, float]:
    """Each pod's share, a KAI reservation pod's less what the fractions on its node hold:
    it reserves whole GPUs that the fraction pods hold parts of (what no fraction holds
    stays with the reservation, never below 0)."""
    shares = {pod: item.share for pod, item in held.items()}
    fractions = sum(item.share for item in held.values() if not item.slots and not item.dra_devices)
    for pod in sorted(shares):
        if pod.partition("/")[0] in RESERVATION_NAMESPACES and fractions > 0:
            taken = min(shares[pod], fractions)
            shares[pod] -= taken
            fractions -= taken
    return shares


def _gpu_holds(node: NodeState, gpu: GpuState) -> list[GpuHold]:
    """Who held slots of this GPU (its MIG devices too), one entry per pod and resource."""
    slots: dict[tuple[str, str], int] = {}
    holders: Iterable[SlotHolder] = [
        *gpu.holders,
        *(holder for device in gpu.mig_devices for holder in device.holders),
    ]
    for holder in holders:
        key = (holder.pod, holder.resource)
        slots[key] = slots.get(key, 0) + holder.slots
    config = _config_source(node)
    return [
        GpuHold(
            gpu.uuid,
            gpu.index,
            pod,
            resource,
            count,
            mode=node.mode.value,
            replicas=node.replicas,
            config=config,
            node=node.name,
        )
        for (pod, resource), count in sorted(slots.items())
    ]


def _config_source(node: NodeState) -> str:
    """Where the node's plugin config comes from (configmap/<name>#<key>), "" if unknown."""
    return (node.config.source if node.config is not None else None) or ""
