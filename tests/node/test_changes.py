"""An admin's mode switch through our API, judged by the real DaemonSet controller and kubelet.

The dashboard writes with the chart's ServiceAccount; the real controller replaces the
plugin's pod, the real plugin restarts with the new config from the mock library, and the
real kubelet advertises what it registers. The preview's after-figure must be that number.
"""

from __future__ import annotations

from typing import Any

from tests.node.world import NODE, NodeWorld, seed_objects, wait_until

TO_TS4 = {"mode": "time-slicing", "replicas": 4}


def _basic_ready(world: NodeWorld) -> bool:
    return world.allocatable() == "2" and world.plugin_rolled()


def _rollout_done(world: NodeWorld) -> dict[str, Any] | None:
    body: dict[str, Any] = world.admin("GET", "/api/v1/plugin/rollout").json()
    return body if body.get("done") else None


def test_mode_switch_from_our_api_rolls_the_real_plugin_to_the_previewed_slots(
    clean_node: NodeWorld,
) -> None:
    world = clean_node
    world.apply([o for o in seed_objects("host-split") if o["kind"] != "Pod"])
    wait_until(lambda: _basic_ready(world), what="the seed's basic plugin serving 2 slots")
    wait_until(
        lambda: world.node_view().get("expected_slots") == 2,
        what="the dashboard reading the basic plugin",
    )
    generation = _generation(world)

    preview = world.admin("PUT", "/api/v1/plugin/config", json=TO_TS4, params={"dryRun": "true"})

    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["serverDryRun"]["ok"] is True, body["serverDryRun"]
    row = next(n for n in body["nodes"] if n["node"] == NODE)
    assert (row["before"], row["after"]) == (2, 8)
    assert world.allocatable() == "2" and _generation(world) == generation  # nothing written

    applied = world.admin(
        "PUT",
        "/api/v1/plugin/config",
        json={**TO_TS4, "expectedToken": body["token"]},
    )

    assert applied.status_code == 200, applied.text
    wait_until(
        lambda: _generation(world) > generation and world.plugin_rolled(),
        what="the real DaemonSet controller to roll the plugin's pod",
    )
    wait_until(
        lambda: world.allocatable() == str(row["after"]),
        what=f"the real kubelet advertising the preview's {row['after']} slots",
    )
    done = wait_until(lambda: _rollout_done(world), what="the rollout view to say done")
    assert (done["mode"], done["replicas"]) == ("time-slicing", 4)
    view = wait_until(
        lambda: (v := world.node_view()).get("allocatable") == row["after"] and v,
        what="the dashboard showing the new allocatable",
    )
    assert view["expected_slots"] == row["after"] == 8


def _generation(world: NodeWorld) -> int:
    with world.plane.http() as http:
        ds = http.get(
            "/apis/apps/v1/namespaces/kube-system/daemonsets/nvidia-device-plugin-daemonset"
        ).json()
    return int(ds["metadata"]["generation"])


def _finding(world: NodeWorld, code: str) -> dict[str, Any] | None:
    return next((f for f in world.findings() if f["code"] == code), None)


def test_a_pod_keeping_its_whole_gpu_id_after_the_switch_is_a_finding(
    clean_node: NodeWorld,
) -> None:
    world = clean_node
    world.apply(seed_objects("host-split"))  # basic, with ml/notebook-0 holding one GPU
    world.wait_running("ml", "notebook-0")
    held = wait_until(
        lambda: _kubelet_ids(world).get("ml/notebook-0"),
        what="the real kubelet's device for ml/notebook-0",
    )
    assert "::" not in held[0]  # a whole GPU in basic mode
    assert _finding(world, "device-id-from-before-switch") is None
    preview = world.admin("PUT", "/api/v1/plugin/config", json=TO_TS4, params={"dryRun": "true"})
    token = preview.json()["token"]

    applied = world.admin("PUT", "/api/v1/plugin/config", json={**TO_TS4, "expectedToken": token})

    assert applied.status_code == 200, applied.text
    wait_until(lambda: world.allocatable() == "8", what="the real kubelet advertising 8 replicas")
    assert _kubelet_ids(world)["ml/notebook-0"] == held  # the real kubelet keeps the old ID
    found = wait_until(
        lambda: _finding(world, "device-id-from-before-switch"),
        what="the dashboard's finding for the pod's whole-GPU ID",
        timeout_s=60,
    )
    assert (found["pod"], found["node"], found["gpu_uuid"]) == ("ml/notebook-0", NODE, held[0])
    assert found["remedy"].startswith("kubectl -n ml delete pod notebook-0")


def _kubelet_ids(world: NodeWorld) -> dict[str, list[str]]:
    from tests.node.test_holders import _kubelet_devices

    return _kubelet_devices(world)
