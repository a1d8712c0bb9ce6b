"""A GPU failure NVML reports (a critical Xid) as the real plugin and kubelet handle it.

The mock library raises the Xid the machine file gives a GPU; the real plugin's health
check marks that GPU unhealthy and the real kubelet drops it from allocatable (capacity
stays). The dashboard must show the same numbers and say why.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.node.world import NODE, NodeWorld, seed_objects, wait_until

FAILING = "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83"  # advertised (GPU 3)


@pytest.fixture
def basic(clean_node: NodeWorld) -> Iterator[NodeWorld]:
    world = clean_node
    original = world.machine_path.read_text()
    world.apply([o for o in seed_objects("host-split") if o["kind"] != "Pod"])
    wait_until(
        lambda: world.allocatable() == "2" and world.plugin_rolled(),
        what="the seed's basic plugin serving 2 slots",
    )
    yield world
    world.machine_path.write_text(original)  # before the next plugin pod reads it


def _capacity(world: NodeWorld) -> str | None:
    with world.plane.http() as http:
        status = http.get(f"/api/v1/nodes/{NODE}").json()["status"]
    value = (status.get("capacity") or {}).get("nvidia.com/gpu")
    return None if value is None else str(value)


def test_an_xid_makes_the_real_plugin_drop_the_gpu_and_the_dashboard_says_so(
    basic: NodeWorld,
) -> None:
    world = basic
    machine: dict[str, Any] = copy.deepcopy(json.loads(world.machine_path.read_text()))
    for gpu in machine["gpus"]:
        if gpu["uuid"] == FAILING:
            gpu["xid"] = 79  # GPU has fallen off the bus: not in the plugin's skip list

    world.set_machine(machine)

    wait_until(
        lambda: world.allocatable() == "1" and _capacity(world) == "2",
        what="the real kubelet's allocatable 1 of capacity 2 after the Xid",
        timeout_s=90,
    )
    view = wait_until(
        lambda: (v := world.node_view()).get("allocatable") == 1 and v,
        what="the dashboard showing allocatable 1",
        timeout_s=60,
    )
    assert (view["capacity"], view["expected_slots"]) == (2, 2)
    found = wait_until(
        lambda: next((f for f in world.findings() if f["code"] == "unhealthy-devices"), None),
        what="the dashboard's unhealthy-devices finding",
        timeout_s=60,
    )
    assert found["node"] == NODE
