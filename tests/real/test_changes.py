"""Admin changes against the real API server: real dry run, real 409s, the real rollout.

The dashboard writes with the chart's ServiceAccount; the real DaemonSet controller
replaces the plugin pods (RollingUpdate, maxUnavailable 1), the actor starts each new pod
with the config it mounts, and the dashboard's rollout view follows it. In the demo the
controller's first replacement is gpu-ws-5's crash-looping pod, whose successor crashes
too and spends the whole budget: the rollout is held until maxUnavailable is raised. Each
test leaves the cluster as it found it (rollback), so the tier's other tests see the demo.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.live import wait_for
from tests.real.conftest import RealWorld

NS = "kube-system"
SHARED = "nvidia-device-plugin-daemonset"
TO_TS4 = {"mode": "time-slicing", "replicas": 4}
BLIND = {"force": "true"}  # an apply without its preview's token, asked for (else 428)
NODE = "gpu-server-1"  # GPUs 0-1 kept for host training, 2-3 advertised
GPU = [
    "GPU-3f1c5a2e-8b4d-4e6f-9a7b-0c1d2e3f4a50",
    "GPU-7a2b9c4d-1e3f-4a5b-8c6d-2e4f6a8b0c61",
    "GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72",
    "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83",
]


def allocatable(world: RealWorld, node: str) -> str:
    with world.plane.http() as http:
        status = http.get(f"/api/v1/nodes/{node}").json()["status"]
    return str(status["allocatable"].get("nvidia.com/gpu", "-"))


def _until_allocatable(world: RealWorld, node: str, value: str, *, what: str) -> bool:
    return wait_for(
        lambda: allocatable(world, node) == value, timeout_s=120, interval_s=0.5, what=what
    )


def rollout(world: RealWorld) -> dict[str, Any]:
    body: dict[str, Any] = world.get("/api/v1/plugin/rollout").json()
    return body


def _put_config(world: RealWorld, body: dict[str, Any], *, dry_run: bool = False) -> httpx.Response:
    params = {"dryRun": "true"} if dry_run else BLIND
    return world.admin("PUT", "/api/v1/plugin/config", json=body, params=params)


def _daemonset(world: RealWorld) -> dict[str, Any]:
    with world.plane.http() as http:
        body: dict[str, Any] = http.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets/{SHARED}").json()
    return body


def _max_unavailable(world: RealWorld, value: int) -> None:
    with world.plane.http() as http:
        http.patch(
            f"/apis/apps/v1/namespaces/{NS}/daemonsets/{SHARED}",
            json={"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": value}}}},
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()


def test_mode_switch_is_held_by_the_crash_looping_node_as_the_view_says(world: RealWorld) -> None:
    preview = _put_config(world, TO_TS4, dry_run=True)
    assert preview.status_code == 200, preview.text
    assert preview.json()["serverDryRun"]["ok"] is True
    assert allocatable(world, "gpu-server-2") == "2"  # the real dry run wrote nothing

    applied = _put_config(world, {**TO_TS4, "expectedToken": preview.json()["token"]})

    assert applied.status_code == 200, applied.text
    try:
        held = wait_for(
            lambda: (r := rollout(world))["blocked_by"] and r,
            timeout_s=60,
            interval_s=0.5,
            what="the rollout held by gpu-ws-5",
        )
        assert (held["state"], held["blocked_by"]) == ("stuck", ["gpu-ws-5"])
        # The real controller replaced gpu-ws-5's pod (unavailable already) and no other.
        wait_for(
            lambda: _daemonset(world)["status"].get("updatedNumberScheduled") == 1,
            timeout_s=60,
            interval_s=0.5,
            what="the controller to replace gpu-ws-5's pod",
        )
        assert allocatable(world, "gpu-server-2") == "2"
        assert rollout(world)["blocked_by"] == ["gpu-ws-5"]

        _max_unavailable(world, 2)  # the remedy the view names: room for the failing node
        _until_allocatable(
            world, "gpu-server-2", "8", what="2 GPUs x 4 replicas on gpu-server-2 after the rollout"
        )
        done = wait_for(
            lambda: (r := rollout(world))["done"] and r,
            timeout_s=60,
            interval_s=0.5,
            what="the rollout view to say done",
        )
        assert (done["mode"], done["replicas"], done["pending"]) == ("time-slicing", 4, [])
        assert _daemonset(world)["status"]["updatedNumberScheduled"] == 6
    finally:  # leave the demo as it was for the other tests, whatever failed above
        _max_unavailable(world, 2)
        rolled = world.admin("POST", "/api/v1/plugin/config/rollback", params=BLIND)
        back = _until_allocatable(
            world, "gpu-server-2", "2", what="back to 2 slots after the rollback's rollout"
        )
        _max_unavailable(world, 1)
    assert rolled.status_code == 200 and back, rolled.text
    kinds = [(c["kind"], c["action"]) for c in world.get("/api/v1/changes").json()["changes"]]
    assert kinds[:2] == [("mode", "rollback"), ("mode", "change")]


def _status_write(world: RealWorld) -> None:
    """What the DaemonSet controller does on every plugin pod change: a write of status only."""
    with world.plane.http() as http:
        http.patch(
            f"/apis/apps/v1/namespaces/{NS}/daemonsets/{SHARED}/status",
            json={"status": {"numberMisscheduled": 3}},
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()


def _advertised(world: RealWorld) -> dict[str, int | None]:
    nodes = world.get("/api/v1/nodes").json()["nodes"]
    return {n["name"]: n["allocatable"] for n in nodes if n["gpu_node"]}


def _settled(world: RealWorld, expected: dict[str, int | None], *, what: str) -> None:
    wait_for(lambda: rollout(world)["done"], timeout_s=120, interval_s=0.5, what=f"{what}: done")
    deadline = time.monotonic() + 60
    while _advertised(world) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _advertised(world) == expected, what


def _preview_then_apply(
    world: RealWorld, method: str, path: str, body: dict[str, Any], *, status_write: bool
) -> dict[str, int | None]:
    preview = world.admin(method, path, json=body, params={"dryRun": "true"})
    assert preview.status_code == 200, preview.text
    shown = preview.json()
    assert shown["failingNodes"] == ["gpu-ws-5"] and shown["holdsAtMaxUnavailable"] is True
    rows = {r["node"]: r for r in shown["nodes"]}
    assert rows["gpu-ts-7"]["unchanged"] == "other-install"
    assert rows["gpu-dra-9"]["unchanged"] == "dra"
    before_rv = _daemonset(world)["metadata"]["resourceVersion"]
    if status_write:
        _status_write(world)
        assert _daemonset(world)["metadata"]["resourceVersion"] != before_rv
    applied = world.admin(
        method, path, json={**body, "expectedToken": shown["token"], "passFailingNodes": True}
    )
    assert applied.status_code == 200, applied.text
    assert applied.json()["maxUnavailable"]["to"] == 2
    return {n: r["after"] for n, r in rows.items()}


def _latest_change(world: RealWorld) -> dict[str, Any]:
    change: dict[str, Any] = world.get("/api/v1/changes").json()["changes"][0]
    return change


def _until_put_back(world: RealWorld) -> None:
    wait_for(
        lambda: (rollout(world)["max_unavailable"] or {}).get("restoredAt"),
        timeout_s=60,
        interval_s=0.5,
        what="maxUnavailable put back",
    )


def test_a_status_write_is_no_conflict_and_passing_the_failing_node_ends_as_previewed(
    world: RealWorld,
) -> None:
    """Preview, a status-only write, apply with the token: 200; the rollout passes gpu-ws-5
    (maxUnavailable raised for it, put back after), and every node advertises what the
    preview said, for the switch and for its rollback."""
    after = _preview_then_apply(world, "PUT", "/api/v1/plugin/config", TO_TS4, status_write=True)
    try:
        _settled(world, after, what="time-slicing x4 as previewed")
        _until_put_back(world)
        strategy = _daemonset(world)["spec"]["updateStrategy"]
        assert strategy["rollingUpdate"]["maxUnavailable"] == 1
        put_back = rollout(world)["max_unavailable"]["restoredAt"]
        record = wait_for(  # the history record says it too, signed again (issue 28)
            lambda: (c := _latest_change(world))["rollout"]["maxUnavailable"]["restoredAt"] and c,
            timeout_s=60,
            interval_s=0.5,
            what="the history record to say maxUnavailable was put back",
        )
        assert record["rollout"]["brokenBefore"] == ["gpu-ws-5"]
        assert record["rollout"]["maxUnavailable"] == {"from": 1, "to": 2, "restoredAt": put_back}
        assert record["verified"] is True
    finally:
        back = _preview_then_apply(
            world, "POST", "/api/v1/plugin/config/rollback", {}, status_write=False
        )
    _settled(world, back, what="the rollback as previewed")
    _until_put_back(world)


def test_a_spec_edit_after_the_preview_is_a_409_naming_it_and_nothing_is_written(
    world: RealWorld,
) -> None:
    preview = _put_config(world, TO_TS4, dry_run=True).json()
    before = _daemonset(world)
    _max_unavailable(world, 2)
    try:
        response = _put_config(world, {**TO_TS4, "expectedToken": preview["token"]})
        edited = _daemonset(world)
    finally:
        _max_unavailable(world, 1)

    assert response.status_code == 409
    detail = response.json()["detail"]
    assert f"daemonset/{NS}/{SHARED}: spec.updateStrategy changed (generation" in detail
    assert edited["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert edited["spec"]["template"] == before["spec"]["template"]  # the switch not written


def test_per_node_split_gets_its_own_daemonset_and_rolls_back(world: RealWorld) -> None:
    body = {
        "kubernetesGpus": GPU[1:],
        "mode": "basic",
        "replicas": 1,
        "confirmHostProcesses": True,
    }
    before = _advertised(world)
    preview = world.admin(
        "PUT", f"/api/v1/nodes/{NODE}/gpu-split", json=body, params={"dryRun": "true"}
    )
    assert preview.status_code == 200, preview.text
    assert preview.json()["serverDryRunOk"] is True
    assert preview.json()["slotsBefore"] == before[NODE]
    _status_write(world)  # the controller's kind of write: the token still holds

    applied = world.admin(
        "PUT",
        f"/api/v1/nodes/{NODE}/gpu-split",
        json={**body, "expectedToken": preview.json()["token"]},
    )

    assert applied.status_code == 200, applied.text
    _until_allocatable(world, NODE, "3", what="3 GPUs advertised by the node's own DaemonSet")
    assert _advertised(world) == {**before, NODE: preview.json()["slotsAfter"]}
    split = world.get(f"/api/v1/nodes/{NODE}/gpu-split").json()
    assert split["daemonset"]["own"] is True

    assert applied.json()["changeId"], applied.text
    path = f"/api/v1/changes/{applied.json()['changeId']}/rollback"
    undo_preview = world.admin("POST", path, json={}, params={"dryRun": "true"})
    assert undo_preview.status_code == 200, undo_preview.text
    assert undo_preview.json()["slotsAfter"] == before[NODE]
    assert world.get(f"/api/v1/nodes/{NODE}/gpu-split").json()["daemonset"]["own"] is True
    undo = world.admin(
        "POST",
        path,
        json={"confirmHostProcesses": True, "expectedToken": undo_preview.json()["token"]},
    )

    assert undo.status_code == 200, undo.text
    _until_allocatable(world, NODE, "2", what="the shared DaemonSet's 2 slots again")
    wait_for(lambda: _advertised(world) == before, timeout_s=60, interval_s=0.5, what="as before")
    assert world.get(f"/api/v1/nodes/{NODE}/gpu-split").json()["daemonset"]["own"] is False


def test_history_outlives_its_events_and_a_dashboard_restart(
    world: RealWorld, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 22's durable history, with the chart's Role judged by the real authorizer."""
    body = {
        "kubernetesGpus": GPU[1:],
        "mode": "basic",
        "replicas": 1,
        "confirmHostProcesses": True,
    }
    applied = world.admin("PUT", f"/api/v1/nodes/{NODE}/gpu-split", json=body, params=BLIND)
    assert applied.status_code == 200, applied.text
    change = applied.json()["changeId"]
    _until_allocatable(world, NODE, "3", what="the split applied")
    with world.plane.http() as http:
        http.delete(f"/api/v1/namespaces/{NS}/events").raise_for_status()
        left = http.get(f"/api/v1/namespaces/{NS}/events").json()["items"]
    assert left == []

    world.restart_dashboard(tmp_path_factory.mktemp("dashboard-again"))

    listed = world.get("/api/v1/changes").json()["changes"]
    assert change in [c["id"] for c in listed]
    undo = world.admin(
        "POST",
        f"/api/v1/changes/{change}/rollback",
        json={"confirmHostProcesses": True},
        params=BLIND,
    )
    assert undo.status_code == 200, undo.text
    _until_allocatable(world, NODE, "2", what="the split rolled back from the durable record")


def test_nodes_of_another_install_and_dra_are_refused_up_front(world: RealWorld) -> None:
    for node, code in (("gpu-ts-7", "other-plugin-install"), ("gpu-dra-9", "dra-node")):
        view = world.get(f"/api/v1/nodes/{node}/gpu-split").json()
        assert (view["editable"], view["refusal"]["code"]) == (False, code), view
        assert view["refusal"]["changeInstead"]
        refused = world.admin(
            "PUT",
            f"/api/v1/nodes/{node}/gpu-split",
            json={"kubernetesGpus": [g["uuid"] for g in view["gpus"]][:1], "mode": "basic"},
            params=BLIND,
        )
        assert refused.status_code == 409, refused.text
    with world.plane.http() as http:
        names = [
            d["metadata"]["name"]
            for d in http.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets").json()["items"]
        ]
    assert not [n for n in names if n.endswith(("gpu-ts-7", "gpu-dra-9"))]
    overview = world.get("/").text
    assert 'data-testid="edit-gpus-gpu-ts-7"' not in overview
    assert 'data-testid="edit-gpus-gpu-dra-9"' not in overview
    assert 'data-testid="edit-gpus-gpu-server-1"' in overview
