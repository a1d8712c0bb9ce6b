"""Free GPUs per model, worked out again only for node states that changed (issue 30: at
10,000 nodes looking at every GPU of every node was most of a summary's rendering)."""

from __future__ import annotations

import pytest

from app.domain.accounting import free_gpus
from app.domain.accounting.free_gpus import NodeFreeMemo, free_by_model
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
    memo: NodeFreeMemo = {}
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

    assert free_by_model(nodes[:1], memo=memo) == free_by_model(nodes[:1])
    assert set(memo) == {nodes[0].name}  # nodes gone are dropped
