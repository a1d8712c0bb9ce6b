"""Quantities end to end on the simulator tier: what a real API server stores is read right.

A node advertising 1,000 slots (4 GPUs x 250 replicas) is stored as `"1k"`; pods asking
`"1e0"` and `"1000m"` hold one slot each and a pod asking `"2k"` waits for 2,000. The real
tier repeats this against kube-apiserver (tests/real/test_quantities.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from app.simulator.apiserver.resources import NODE
from tests.conftest import Stack

SCENARIO = Path(__file__).with_name("quantities.scenario.yaml")


def _pod(name: str, gpus: str, *, node: str | None = "gpu-node-a") -> dict[str, object]:
    spec: dict[str, object] = {
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": spec,
    }


def _scenario(tmp_path: Path) -> Path:
    base = yaml.safe_load(SCENARIO.read_text())
    base["objects"] += [
        _pod("one-e0", "1e0"),
        _pod("one-milli", "1000m"),
        _pod("big", "2k", node=None),
    ]
    path = tmp_path / "quantities.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


def test_thousand_slot_node_and_quantity_forms_counted_right(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack(str(_scenario(tmp_path)))
    stack.wait(
        lambda: stack.summary()["resources"].get("nvidia.com/gpu", {}).get("allocatable") == 1000,
        what="1,000 slots advertised",
    )
    node = stack.simulator.store.get(NODE, None, "gpu-node-a")
    assert node is not None
    assert node.obj["status"]["allocatable"]["nvidia.com/gpu"] == "1k"
    resources = stack.summary()["resources"]["nvidia.com/gpu"]  # type: ignore[index]
    assert (resources["allocatable"], resources["requested"], resources["free"]) == (1000, 2, 998)
    [demand] = stack.summary()["pending_demand"]  # type: ignore[misc]
    assert (demand["pods"], demand["slots"]) == (1, 2000)
