"""Free GPUs per model, worked out again only for node states that changed (issue 30: at
10,000 nodes looking at every GPU of every node was most of a summary's rendering)."""

from __future__ import annotations

import pytest

from app.domain.accounting import free_gpus
from app.domain.accounting.free_gpus import FreeMemo, free_by_model
from app.domain.snapshot import NodeState
from tests import factories as f
from tests.domain.worlds import snap, world


def _looked_at(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = free_gpus._node_free

    def counting(node: NodeState, *, model: str = "") -> free_gpus._NodeFree:
        seen.append(node.name)
        return real(node, model=model)

    monkeypatch.setattr(free_gpus, "_node_free", counting)
    return seen


def test_only_node_states_that_changed_are_looked_at_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ["gpu-1", "gpu-2", "gpu-3"]
    state = world(
        nodes=[f.node(name, allocatable=4) for name in names],
        reports=[f.report(name) for name in names],
    )
    nodes = snap(state).nodes
    plain = free_by_model(nodes)
    assert plain and sum(m.whole + m.shares for m in plain) > 0  # something is free
    seen = _looked_at(monkeypatch)
    memo = FreeMemo()
    assert free_by_model(nodes, memo=memo) == plain
    assert sorted(seen) == sorted(n.name for n in nodes)

    seen.clear()
    assert free_by_model(nodes, memo=memo) == plain  # the very same states: none again
    assert seen == []

    changed = nodes[1].model_copy(update={"schedulable": False})  # cordoned: nothing free
    after = [nodes[0], changed, nodes[2]]
    expected = free_by_model(after)
    assert expected != plain
    seen.clear()
    assert free_by_model(after, memo=memo) == expected
    assert seen == [changed.name]

    renewed = [n.model_copy(update={"findings": []}) for n in after]  # e.g. new agent ages
    seen.clear()
    assert free_by_model(renewed, memo=memo) == expected
    assert seen == []  # the very GPUs and resources: nothing looked at again

    assert free_by_model(nodes[:1], memo=memo) == free_by_model(nodes[:1])  # nodes gone
    assert free_by_model(nodes, memo=memo) == plain  # and back


def test_sums_and_node_lists_kept_by_difference_equal_plain_ones() -> None:
    # Nodes are cordoned and uncordoned one at a time, in place: each model's counts and
    # node list (in node order) must be those of the nodes as they are now.
    names = [f"gpu-{i}" for i in range(6)]
    state = world(
        nodes=[f.node(name, allocatable=4) for name in names],
        reports=[f.report(name) for name in names],
    )
    nodes = snap(state).nodes
    cordoned = [n.model_copy(update={"schedulable": False}) for n in nodes]
    memo = FreeMemo()
    current = list(nodes)
    for step, i in enumerate([2, 0, 5, 2, 3, 0, 1, 4, 5, 3]):
        current = list(current)  # a new list, as each snapshot's (never changed in place)
        current[i] = cordoned[i] if current[i] is nodes[i] else nodes[i]
        kept = free_by_model(current, memo=memo)
        assert kept == free_by_model(current), f"step {step}"
        free_nodes = [n.name for n in current if n is nodes[names.index(n.name)]]
        assert [name for m in kept for name in m.nodes] == free_nodes
