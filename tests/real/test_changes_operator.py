"""Issue 28's mixed cluster on the real API server: a GPU Operator install beside the others.

The demo already runs static (kube-system), Helm (gpu-ts-7, gpu-mig-8) and DRA (gpu-dra-9)
nodes; here gpu-server-6 (cordoned: no other real-tier test schedules on it or names it) is
moved to a GPU Operator-managed device plugin DaemonSet, as the Operator deploys it (its own
namespace, node selector `nvidia.com/gpu.deploy.device-plugin=true`, pod template labelled
managed-by gpu-operator). The real DaemonSet controller moves the node's plugin pod from
the shared DaemonSet to the Operator's. A mode switch then previews the node as unchanged
with the reason, the split editor refuses it up front, and after the rollout every node
advertises what the preview said. The fixture puts the node back on the shared DaemonSet
and deletes the Operator's objects, so the tier's other modules see the demo again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.simulator.actor.kubelet import is_plugin_pod
from tests.live import wait_for
from tests.real.conftest import RealWorld
from tests.real.test_changes import _preview_then_apply, _settled, _until_put_back, allocatable

NODE = "gpu-server-6"
OPERATOR_NS = "gpu-operator"
OPERATOR_DS = "nvidia-device-plugin-daemonset"
SHARED = "nvidia-device-plugin-daemonset"
DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
PRESENT_LABEL = "nvidia.com/gpu.present"
# what NFD labels on any NVIDIA node: keeps the chart's agent on the node all along
PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"
DEMO = Path(__file__).resolve().parents[2] / "app" / "simulator" / "world" / "scenarios"
MERGE = {"Content-Type": "application/merge-patch+json"}
DEADLINE_S = 180


def _operator_daemonset() -> dict[str, Any]:
    """The demo's shared plugin DaemonSet as the GPU Operator would deploy it."""
    scenario = yaml.safe_load((DEMO / "demo.yaml").read_text())
    shared = next(
        o
        for o in scenario["objects"]
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == SHARED
    )
    daemonset = copy.deepcopy(shared)
    labels = {"app": OPERATOR_DS, "app.kubernetes.io/managed-by": "gpu-operator"}
    daemonset["metadata"] = {"name": OPERATOR_DS, "namespace": OPERATOR_NS, "labels": labels}
    daemonset["spec"]["selector"] = {"matchLabels": {"app": OPERATOR_DS}}
    template = daemonset["spec"]["template"]
    template["metadata"] = {"labels": labels}
    template["spec"]["nodeSelector"] = {DEPLOY_LABEL: "true"}
    daemonset["spec"]["updateStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1},
    }
    return daemonset


def _pods_on(http: httpx.Client, node: str) -> list[dict[str, Any]]:
    pods = http.get("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={node}"}).json()
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def _plugin_pod(world: RealWorld, namespace: str) -> dict[str, Any] | None:
    """The node's running plugin pod of the DaemonSet in `namespace`, alone on the node."""
    with world.plane.http() as http:
        pods = [p for p in _pods_on(http, NODE) if is_plugin_pod(p)]
    if len(pods) != 1 or pods[0]["metadata"]["namespace"] != namespace:
        return None
    running = (pods[0].get("status") or {}).get("phase") == "Running"
    return pods[0] if running else None


def _refusal(world: RealWorld) -> str | None:
    view = world.get(f"/api/v1/nodes/{NODE}/gpu-split").json()
    code: str | None = (view.get("refusal") or {}).get("code")
    return code


def _label_node(world: RealWorld, labels: dict[str, str | None]) -> None:
    with world.plane.http() as http:
        http.patch(
            f"/api/v1/nodes/{NODE}", json={"metadata": {"labels": labels}}, headers=MERGE
        ).raise_for_status()


def _remove_operator_install(world: RealWorld) -> None:
    with world.plane.http() as http:
        http.delete(f"/apis/apps/v1/namespaces/{OPERATOR_NS}/daemonsets/{OPERATOR_DS}")
        http.delete(f"/api/v1/namespaces/{OPERATOR_NS}")


@pytest.fixture
def operator_node(world: RealWorld) -> Iterator[str]:
    """gpu-server-6 run by the Operator's plugin; the demo's shared DaemonSet again after."""
    before = allocatable(world, NODE)
    refusal_before = _refusal(world)
    try:
        with world.plane.http() as http:
            http.post(
                "/api/v1/namespaces",
                json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NS}},
            ).raise_for_status()
            http.post(
                f"/apis/apps/v1/namespaces/{OPERATOR_NS}/daemonsets", json=_operator_daemonset()
            ).raise_for_status()
        _label_node(world, {DEPLOY_LABEL: "true", PCI_LABEL: "true", PRESENT_LABEL: None})
        wait_for(
            lambda: _plugin_pod(world, OPERATOR_NS),
            timeout_s=DEADLINE_S,
            interval_s=0.5,
            what=f"{NODE}'s plugin pod moved to the Operator's DaemonSet, running",
        )
        wait_for(
            lambda: allocatable(world, NODE) == before,
            timeout_s=DEADLINE_S,
            interval_s=0.5,
            what=f"{NODE} advertising {before} from the Operator's plugin",
        )
        wait_for(
            lambda: _refusal(world) == "operator-managed",
            timeout_s=DEADLINE_S,
            interval_s=0.5,
            what="the dashboard to see the Operator's install",
        )
        yield before
    finally:
        _label_node(world, {DEPLOY_LABEL: None, PCI_LABEL: None, PRESENT_LABEL: "true"})
        _remove_operator_install(world)
        wait_for(
            lambda: _plugin_pod(world, "kube-system"),
            timeout_s=DEADLINE_S,
            interval_s=0.5,
            what=f"{NODE}'s plugin pod back on the shared DaemonSet, alone, running",
        )
        wait_for(
            lambda: allocatable(world, NODE) == before and _refusal(world) == refusal_before,
            timeout_s=DEADLINE_S,
            interval_s=0.5,
            what=f"{NODE} as in the demo again",
        )


def test_an_operator_node_is_refused_up_front_and_unchanged_by_a_mode_switch(
    world: RealWorld, operator_node: str
) -> None:
    view = world.get(f"/api/v1/nodes/{NODE}/gpu-split").json()
    assert (view["editable"], view["refusal"]["code"]) == (False, "operator-managed"), view
    assert f"{OPERATOR_NS}/{OPERATOR_DS}" in view["refusal"]["reason"], view
    assert "ClusterPolicy" in view["refusal"]["changeInstead"], view
    gpus = [g["uuid"] for g in view["gpus"]][:1]
    refused = world.admin(
        "PUT",
        f"/api/v1/nodes/{NODE}/gpu-split",
        json={"kubernetesGpus": gpus, "mode": "basic"},
        params={"dryRun": "true"},
    )
    assert refused.status_code == 409, refused.text
    # A page that renders slowly (a loaded machine) is served from its latest rendering until
    # the newest snapshot's is done (RenderCache): the overview follows the API within a beat.
    wait_for(
        lambda: f'data-testid="edit-gpus-{NODE}"' not in world.get("/").text,
        timeout_s=DEADLINE_S,
        interval_s=0.5,
        what=f"the overview without an Edit GPUs link for {NODE}",
    )
    pod_before = _plugin_pod(world, OPERATOR_NS)
    assert pod_before is not None

    preview = world.admin(
        "PUT",
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params={"dryRun": "true"},
    ).json()
    row = next(r for r in preview["nodes"] if r["node"] == NODE)
    assert (row["unchanged"], row["governedBy"]) == (
        "other-install",
        f"{OPERATOR_NS}/{OPERATOR_DS}",
    )
    assert row["after"] == row["before"] == int(operator_node), row

    after = _preview_then_apply(
        world,
        "PUT",
        "/api/v1/plugin/config",
        {"mode": "time-slicing", "replicas": 4},
        status_write=False,
    )
    try:
        assert after[NODE] == int(operator_node)
        _settled(world, after, what="time-slicing x4 beside the Operator's node, as previewed")
        _until_put_back(world)
        pod_after = _plugin_pod(world, OPERATOR_NS)
        assert pod_after is not None
        assert pod_after["metadata"]["uid"] == pod_before["metadata"]["uid"]  # not touched
    finally:
        back = _preview_then_apply(
            world, "POST", "/api/v1/plugin/config/rollback", {}, status_write=False
        )
    _settled(world, back, what="the rollback beside the Operator's node, as previewed")
    _until_put_back(world)
    assert allocatable(world, NODE) == operator_node
