"""The cluster's sums over its nodes, kept by difference from one build to the next.

Every node adds its part (`NodePart`: the figures the totals add up, its resources, mode and
config); a build for a few changes takes the parts of the nodes it recomputed out and puts
their new ones in, instead of passing over every node (at 10,000 nodes the passes of the
totals, the resources, the mode and the config findings were a third of such a build).
The sums are integers and counts, so the difference is exact: `NodeSums` of a list of nodes
equals the one kept by difference to it (tests/domain/test_engine_sums.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from app.domain.accounting.facts import NodeFacts
from app.domain.snapshot import Mode, NodeState, PendingDemand, ResourceState, Totals

K = TypeVar("K")

# The Totals fields a node adds to, in the order of NodePart.figures
_FIGURES = (
    "physical_gpus",
    "visible_gpus",
    "host_gpus",
    "failing_gpus",
    "allocatable",
    "requested",
    "free",
    "stranded",
)


@dataclass(frozen=True)
class NodePart:
    """What one node adds to the cluster's sums."""

    figures: tuple[int, ...]  # as _FIGURES
    resources: tuple[tuple[str, int, int, int, int], ...]  # name, allocatable, requested, ...
    mode: Mode | None  # of a GPU node whose mode is known
    gpu_node: bool
    configmap: str | None  # the ConfigMap its config comes from
    config_text: str | None


def node_part(facts: NodeFacts, state: NodeState) -> NodePart:
    """The node's part, read from its facts and its state (before pod findings)."""
    return NodePart(
        figures=tuple((getattr(state, name) or 0) for name in _FIGURES),
        resources=tuple(
            (name, r.allocatable, r.requested, r.free, r.stranded)
            for name, r in facts.resources.items()
        ),
        mode=facts.mode if facts.gpu_node and facts.mode is not Mode.UNKNOWN else None,
        gpu_node=facts.gpu_node,
        configmap=facts.config.configmap,
        config_text=facts.config.text,
    )


@dataclass
class NodeSums:
    """The sums of the nodes' parts, each kept under its node's key (its name, or its
    position in a list whose names are not unique)."""

    parts: dict[Hashable, NodePart] = field(default_factory=dict)
    figures: list[int] = field(default_factory=lambda: [0] * len(_FIGURES))
    resources: dict[str, list[int]] = field(default_factory=dict)  # ..., nodes having it
    modes: Counter[Mode | None] = field(default_factory=Counter)
    gpu_nodes: int = 0
    configmaps: Counter[str | None] = field(default_factory=Counter)
    config_texts: Counter[tuple[str, str | None]] = field(default_factory=Counter)

    def take(self, key: Hashable, part: NodePart | None) -> None:
        """The part of the node `key` from now on (None: the node is gone)."""
        old = self.parts.get(key)
        if old == part:
            return
        if old is not None:
            self._add(old, -1)
            del self.parts[key]
        if part is not None:
            self._add(part, 1)
            self.parts[key] = part

    def _add(self, part: NodePart, sign: int) -> None:
        self.figures = [
            mine + sign * theirs for mine, theirs in zip(self.figures, part.figures, strict=True)
        ]
        for name, *values in part.resources:
            row = self.resources.setdefault(name, [0, 0, 0, 0, 0])
            for i, value in enumerate((*values, 1)):
                row[i] += sign * value
            if not row[4]:
                del self.resources[name]
        _count(self.modes, part.mode, sign)
        self.gpu_nodes += sign * part.gpu_node
        _count(self.configmaps, part.configmap, sign)
        if part.configmap:
            _count(self.config_texts, (part.configmap, part.config_text), sign)

    def totals(self, demand: Iterable[PendingDemand]) -> Totals:
        return Totals(
            **dict(zip(_FIGURES, self.figures, strict=True)),
            pending=sum(d.slots for d in demand),
        )

    def resource_states(self) -> dict[str, ResourceState]:
        """Cluster totals per resource (each never negative), by name."""
        return {
            name: ResourceState(allocatable=a, requested=r, free=f, stranded=s)
            for name, (a, r, f, s, _) in sorted(self.resources.items())
        }

    def mode(self, *, default: Mode) -> str:
        """The one mode every GPU node runs, `mixed` when they differ; `default` when none
        says."""
        modes = [m for m in self.modes if m is not None]
        if not modes:
            return default.value
        return modes[0].value if len(modes) == 1 else "mixed"

    def configmaps_in_use(self) -> set[str | None]:
        """The ConfigMaps nodes' configs come from (None: a node's has none)."""
        return set(self.configmaps)

    def config_texts_of(self, configmap: str) -> set[str | None]:
        """The config texts nodes read from `configmap`."""
        return {text for name, text in self.config_texts if name == configmap}


def _count(counter: Counter[K], key: K, sign: int) -> None:
    counter[key] += sign
    if not counter[key]:
        del counter[key]


def sums_of(nodes: Iterable[NodeFacts], states: Iterable[NodeState]) -> NodeSums:
    """The sums of every node (facts and states in the same order)."""
    sums = NodeSums()
    for position, (facts, state) in enumerate(zip(nodes, states, strict=True)):
        sums.take(position, node_part(facts, state))
    return sums
