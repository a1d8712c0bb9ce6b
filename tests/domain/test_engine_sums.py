"""The cluster's sums kept by difference equal the sums of the nodes as they are now."""

from __future__ import annotations

from dataclasses import replace

from app.domain.accounting.sums import NodePart, NodeSums
from app.domain.sequences import replaced_in_place, same_objects
from app.domain.snapshot import Mode


def _part(**changes: object) -> NodePart:
    base = NodePart(
        figures=(8, 8, 0, 0, 8, 3, 5, 0),
        resources=(("nvidia.com/gpu", 8, 3, 5, 0),),
        mode=Mode.BASIC,
        gpu_node=True,
        configmap="nvidia-device-plugin-config",
        config_text="version: v1\n",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _summed(parts: dict[str, NodePart]) -> NodeSums:
    sums = NodeSums()
    for name, part in parts.items():
        sums.take(name, part)
    return sums


def test_sums_kept_by_difference_equal_sums_of_the_current_parts() -> None:
    parts = {
        "a": _part(),
        "b": _part(mode=Mode.TIME_SLICING, resources=(("nvidia.com/gpu.shared", 32, 1, 31, 0),)),
        "c": _part(gpu_node=False, mode=None, figures=(0,) * 8, resources=(), configmap=None),
    }
    kept = _summed(parts)
    assert kept.totals([]).allocatable == 16 and kept.mode(default=Mode.BASIC) == "mixed"
    # b goes back to basic, c is deleted, d arrives with an all-zero resource
    parts["b"] = _part()
    kept.take("b", parts["b"])
    del parts["c"]
    kept.take("c", None)
    parts["d"] = _part(resources=(("nvidia.com/mig-1g.10gb", 0, 0, 0, 0),), config_text="x")
    kept.take("d", parts["d"])
    fresh = _summed(parts)
    assert kept.totals([]) == fresh.totals([])
    assert kept.resource_states() == fresh.resource_states()
    assert list(kept.resource_states()) == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    assert kept.mode(default=Mode.UNKNOWN) == fresh.mode(default=Mode.UNKNOWN) == "basic"
    assert kept.gpu_nodes == fresh.gpu_nodes == 3
    assert kept.configmaps_in_use() == fresh.configmaps_in_use() == {"nvidia-device-plugin-config"}
    assert kept.config_texts_of("nvidia-device-plugin-config") == {"version: v1\n", "x"}
    # the shared resource no node has any more is gone, not left at zero
    assert "nvidia.com/gpu.shared" not in kept.resource_states()


def test_no_gpu_node_with_a_known_mode_says_the_default() -> None:
    sums = _summed({"cpu": _part(gpu_node=False, mode=None)})
    assert sums.mode(default=Mode.TIME_SLICING) == "time-slicing"


def test_replaced_in_place_names_only_what_changed_in_place() -> None:
    a, b, c = object(), object(), object()
    assert replaced_in_place([a, b], [a, b], key=id) == []
    assert replaced_in_place([a, b], [a, c], key=lambda _: "same") == [1]
    assert replaced_in_place([a, b], [a, b, c], key=id) is None  # added: positions moved
    assert replaced_in_place([a, b], [a, c], key=id) is None  # another key at a position
    assert same_objects([a, b], [a, b]) and not same_objects([a, b], [b, a])
