"""A per-node split through our API, judged by the real controllers, kubelet and plugin.

The shared plugin DaemonSet sees every GPU of the node (no NVIDIA_VISIBLE_DEVICES): 4
slots. The split moves the node to a DaemonSet of its own limited by UUID to GPUs 2-3 (the
mock library honours NVIDIA_VISIBLE_DEVICES as the container runtime does); the real
kubelet's allocatable afterwards must be the preview's `slotsAfter`. Returning the node
gives the shared DaemonSet back its 4 slots.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.node.world import NODE, NodeWorld, seed_objects, wait_until

KEPT_FOR_KUBERNETES = [
    "GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72",
    "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83",
]
SPLIT = f"/api/v1/nodes/{NODE}/gpu-split"


def _whole_node_daemonset() -> dict[str, Any]:
    daemonset = copy.deepcopy(
        next(o for o in seed_objects("host-split") if o["kind"] == "DaemonSet")
    )
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "NVIDIA_VISIBLE_DEVICES"]
    return daemonset


def _plugin_pods_ready(world: NodeWorld) -> bool:
    pods = [
        p
        for p in world.pods("kube-system")
        if p["metadata"]["name"].startswith("nvidia-device-plugin")
    ]
    return len(pods) == 1 and all(
        not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions") or []
        )
        for p in pods
    )


def test_a_split_from_our_api_gives_the_real_node_the_previewed_slots(
    clean_node: NodeWorld,
) -> None:
    world = clean_node
    world.apply([_whole_node_daemonset()])
    wait_until(
        lambda: world.allocatable() == "4" and world.node_view().get("expected_slots") == 4,
        what="the shared plugin serving all 4 GPUs, the dashboard expecting 4",
    )
    body = {"kubernetes_gpus": KEPT_FOR_KUBERNETES, "mode": "basic"}

    preview = world.admin("PUT", SPLIT, json=body, params={"dryRun": "true"})

    assert preview.status_code == 200, preview.text
    plan = preview.json()
    assert (plan["slotsBefore"], plan["slotsAfter"], plan["serverDryRunOk"]) == (4, 2, True)
    applied = world.admin(
        "PUT", SPLIT, json={**body, "expectedResourceVersions": plan["resourceVersions"]}
    )
    assert applied.status_code == 200, applied.text
    try:
        wait_until(
            lambda: world.allocatable() == str(plan["slotsAfter"]) and _plugin_pods_ready(world),
            what="the node's own plugin pod advertising the preview's 2 slots",
            timeout_s=150,
        )
        view = wait_until(
            lambda: (v := world.node_view()).get("allocatable") == 2 and v,
            what="the dashboard showing the split node",
        )
        assert (view["expected_slots"], view["visible_gpus"], view["physical_gpus"]) == (2, 2, 4)
        advertised = sorted(g["uuid"] for g in view["gpus"] if g["role"] == "advertised")
        assert advertised == KEPT_FOR_KUBERNETES
    finally:
        returned = world.admin("DELETE", SPLIT)
    assert returned.status_code == 200, returned.text
    wait_until(
        lambda: world.allocatable() == "4" and _plugin_pods_ready(world),
        what="the shared plugin back on the node with 4 slots",
        timeout_s=150,
    )
