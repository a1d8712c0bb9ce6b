"""Expected slots on the dashboard = what the real kubelet advertises, for the seed's manifests.

The real device plugin (v0.19.3) reads our mock NVML library in its own DaemonSet pod and
registers with the real kubelet; the kubelet's `nvidia.com/gpu` allocatable is the truth
the dashboard's `expected_slots` is judged by.
"""

from __future__ import annotations

from typing import Any

from tests.node.world import NODE, NodeWorld, seed_objects, time_slicing, wait_until


def _agreed(world: NodeWorld, value: str) -> dict[str, Any] | None:
    """The dashboard's node view once the real allocatable is `value` and both agree."""
    if world.allocatable() != value or not world.plugin_rolled():
        return None
    view = world.node_view()
    return view if str(view.get("expected_slots")) == value else None


def test_basic_host_split_expected_slots_equal_real_allocatable(clean_node: NodeWorld) -> None:
    world = clean_node
    world.apply(seed_objects("host-split"))

    view = wait_until(
        lambda: _agreed(world, "2"),
        what="the real kubelet's nvidia.com/gpu: 2 and the dashboard's expected 2 slots",
        timeout_s=120,
    )

    assert (view["mode"], view["physical_gpus"], view["visible_gpus"]) == ("basic", 4, 2)
    assert view["allocatable"] == 2 and view["capacity"] == 2
    hidden = {g["uuid"] for g in view["gpus"] if g["role"] == "host"}
    assert hidden == {
        "GPU-3f1c5a2e-8b4d-4e6f-9a7b-0c1d2e3f4a50",
        "GPU-7a2b9c4d-1e3f-4a5b-8c6d-2e4f6a8b0c61",
    }, view["gpus"]
    assert world.node_view()["name"] == NODE


def test_time_slicing_expected_slots_equal_real_allocatable(clean_node: NodeWorld) -> None:
    world = clean_node
    world.apply(time_slicing(replicas=4))

    view = wait_until(
        lambda: _agreed(world, "8"),
        what="2 visible GPUs x 4 replicas: the real 8 and the dashboard's expected 8",
        timeout_s=120,
    )

    assert (view["mode"], view["replicas"], view["visible_gpus"]) == ("time-slicing", 4, 2)
