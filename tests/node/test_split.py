"""A per-node split through our API, judged by the real controllers, kubelet and plugin.

The shared plugin DaemonSet sees every GPU of the node (no NVIDIA_VISIBLE_DEVICES): 4
slots. The split moves the node to a DaemonSet of its own limited by UUID to GPUs 2-3 (the
mock library honours NVIDIA_VISIBLE_DEVICES as the container runtime does); the real
kubelet's allocatable afterwards must be the preview's `slotsAfter`. Returning the node
gives the shared DaemonSet back its 4 slots.

Found here: the two DaemonSets hand the node over with both plugin pods briefly running.
When the old plugin's stream ends after the new one registered, the real kubelet marks the
resource's devices unhealthy (its PluginDisconnected does not check which plugin left) and
the node advertises 0 until the new plugin restarts. Whether it happens depends on timing;
when it does, the dashboard must show the 0, and a rollout restart of the node's plugin (the
remedy it names) must bring the previewed figure.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx

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


def _settled(world: NodeWorld, expected: str) -> str:
    """The real allocatable once one plugin pod serves the node (restarted after a 0)."""
    wait_until(lambda: _plugin_pods_ready(world), what="one ready plugin pod on the node")
    try:
        wait_until(lambda: world.allocatable() == expected, what=expected, timeout_s=20)
    except AssertionError:
        lost = world.allocatable()
        assert lost == "0", f"the node advertises {lost}, neither {expected} nor the lost 0"
        wait_until(
            lambda: world.node_view().get("allocatable") == 0,
            what="the dashboard showing the node's 0 slots",
            timeout_s=60,
        )
        pod = _plugin_pod(world)
        assert pod, "no plugin pod to restart"
        with world.plane.http() as http:  # what `kubectl rollout restart` leads to
            http.delete(f"/api/v1/namespaces/kube-system/pods/{pod}").raise_for_status()
        wait_until(
            lambda: world.allocatable() == expected and _plugin_pods_ready(world),
            what=f"{expected} slots after restarting the node's plugin",
            timeout_s=120,
        )
    return expected


def _plugin_pod(world: NodeWorld) -> str:
    """The name of the plugin pod on the node that is not going away ("" between two)."""
    return next(
        (
            p["metadata"]["name"]
            for p in world.pods("kube-system")
            if p["metadata"]["name"].startswith("nvidia-device-plugin")
            and not p["metadata"].get("deletionTimestamp")
        ),
        "",
    )


def _preview_and_apply(
    world: NodeWorld, body: dict[str, Any]
) -> tuple[dict[str, Any], httpx.Response]:
    """Preview, then apply with the preview's token.

    Between the two the kubelet and the DaemonSet controller rewrite the Node's and the
    shared DaemonSet's status: the token holds what the plan read, so that is no conflict.
    """
    preview = world.admin("PUT", SPLIT, json=body, params={"dryRun": "true"})
    assert preview.status_code == 200, preview.text
    plan: dict[str, Any] = preview.json()
    applied = world.admin("PUT", SPLIT, json={**body, "expectedToken": plan["token"]})
    return plan, applied


def test_a_split_from_our_api_gives_the_real_node_the_previewed_slots(
    clean_node: NodeWorld,
) -> None:
    world = clean_node
    world.apply([_whole_node_daemonset()])
    wait_until(
        lambda: (
            world.allocatable() == "4"
            and world.plugin_rolled()
            and world.node_view().get("expected_slots") == 4
        ),
        what="the shared plugin serving all 4 GPUs, the dashboard expecting 4",
    )
    body = {"kubernetes_gpus": KEPT_FOR_KUBERNETES, "mode": "basic"}

    plan, applied = _preview_and_apply(world, body)

    assert (plan["slotsBefore"], plan["slotsAfter"], plan["serverDryRunOk"]) == (4, 2, True)
    assert applied.status_code == 200, applied.text
    try:
        wait_until(
            lambda: _plugin_pod(world).startswith(f"nvidia-device-plugin-daemonset-{NODE}"),
            what="the node's own plugin pod",
        )
        assert _settled(world, str(plan["slotsAfter"])) == world.allocatable() == "2"
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
        lambda: not _plugin_pod(world).startswith(f"nvidia-device-plugin-daemonset-{NODE}"),
        what="the shared plugin's pod back on the node",
    )
    assert _settled(world, "4") == world.allocatable()
