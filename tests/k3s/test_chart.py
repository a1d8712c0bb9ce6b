"""The chart as k3s installs it: a HelmChart manifest, k3s's helm-controller, our image's pods.

What a user would check after dropping the manifest into `server/manifests/` on an
air-gapped k3s node: helm-controller's install Job succeeded and the release exists; the
dashboard and the agent run from our image (imported from `agent/images/`, never pulled),
with the chart's ServiceAccounts, the agent with RuntimeClass `nvidia` (k3s's, whose runtime
is the toolkit k3s found); the dashboard answers through its Service; the agent's report, read
through NVML in its pod, shows the node's four GPUs on it.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.k3s.conftest import DASHBOARD_URL, NAMESPACE, RELEASE, ready_pods
from tests.k3s.pages import describe_node
from tests.node.chart_image import IMAGE
from tests.node.world import NODE, NodeWorld, seed_objects, wait_until


def _get(world: NodeWorld, path: str) -> dict[str, Any]:
    with world.plane.http() as http:
        answer = http.get(path)
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def test_helm_controller_installed_the_chart_from_the_manifest(node_world: NodeWorld) -> None:
    world = node_world
    job = _get(world, f"/apis/batch/v1/namespaces/kube-system/jobs/helm-install-{RELEASE}")
    assert job["status"].get("succeeded") == 1, job["status"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"].startswith("localhost/gpu-slots-test/helm-job")
    chart = _get(world, f"/apis/helm.cattle.io/v1/namespaces/kube-system/helmcharts/{RELEASE}")
    assert chart["status"].get("jobName") == f"helm-install-{RELEASE}", chart["status"]
    secrets = _get(world, f"/api/v1/namespaces/{NAMESPACE}/secrets")["items"]
    releases = [s["metadata"]["name"] for s in secrets if s["type"] == "helm.sh/release.v1"]
    assert releases == [f"sh.helm.release.v1.{RELEASE}.v1"]


def test_dashboard_and_agent_run_from_our_imported_image(node_world: NodeWorld) -> None:
    world = node_world
    pods = ready_pods(world)
    assert pods is not None
    for component, pod in pods.items():
        (status,) = pod["status"]["containerStatuses"]
        assert status["image"].endswith(IMAGE.removeprefix("localhost/")), status
        assert pod["spec"]["nodeName"] == NODE
        assert pod["spec"]["serviceAccountName"] == f"{RELEASE}-{component}"
    assert pods["agent"]["spec"]["runtimeClassName"] == "nvidia"
    runtime_class = _get(world, "/apis/node.k8s.io/v1/runtimeclasses/nvidia")
    assert runtime_class["handler"] == "nvidia"
    events = _get(world, f"/api/v1/namespaces/{NAMESPACE}/events")["items"]
    assert not [e for e in events if e.get("reason") == "Pulling"]  # imported, never pulled

    assert httpx.get(f"{DASHBOARD_URL}/readyz", timeout=10).status_code == 200
    view = world.node_view()
    assert (view["agent"]["fresh"], view["physical_gpus"]) == (True, 4), view


def test_seed_004_basic_plugin_serves_the_node_and_the_dashboard_agrees(
    clean_node: NodeWorld,
) -> None:
    """Seed 000/004's basic DaemonSet (limited to GPUs 2-3): kubectl and the page say 2."""
    world = clean_node
    world.apply([o for o in seed_objects("host-split") if o["kind"] != "Pod"])

    wait_until(
        lambda: world.allocatable() == "2" and world.plugin_rolled(),
        what="the seed's plugin DaemonSet serving 2 GPUs on k3s",
    )
    view = wait_until(
        lambda: (v := world.node_view()).get("expected_slots") == 2 and v,
        what="the dashboard pod expecting the 2 slots",
    )
    assert describe_node(world) == {"allocatable": 2, "allocated": 0}
    assert (view["mode"], view["visible_gpus"], view["physical_gpus"]) == ("basic", 2, 4)
