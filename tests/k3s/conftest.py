"""The product as a user installs it: a real k3s, our image, the chart through a HelmChart.

Order of set-up: build (cached: k3s, the node's parts, our image's base and wheelhouse) ->
the images, made on the machine (pause; the real device plugin over the mock NVML; the
helm-controller's job image; our image from the Dockerfile, offline) dropped into k3s's
`agent/images/` -> `k3s server` (Node `gpu-server-1` Ready) -> the node's machine file (the
`host-split` scenario's four GPUs) in the kubelet's device-plugins folder -> a `HelmChart`
manifest in k3s's `server/manifests/`: k3s's helm-controller installs the chart with its
job -> the dashboard Deployment and the agent DaemonSet run from our image (the agent with
RuntimeClass `nvidia`, from k3s's manifests; its runtime is the toolkit k3s found) -> the
agent's report reaches the dashboard through the chart's Service. The tests drive the
dashboard's pages in a real browser; `node_world` is what tests/node's helpers take. Torn
down in reverse; then k3s must have left nothing on the machine.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.k3s.build import k3s_binary
from tests.k3s.helm_job import HELM_JOB_IMAGE, helm_job_image
from tests.k3s.server import K3sNode, start_k3s
from tests.kube_tools import kube_tools
from tests.node.build import NodeUnavailable, node_binaries
from tests.node.chart_image import IMAGE, build_image, image_requirements
from tests.node.conftest import clean_node  # noqa: F401 - the same clean start, on k3s
from tests.node.images import MACHINE_FILE, PAUSE_IMAGE, pause_image, plugin_image
from tests.node.machine_state import NodeSkipped, missing_requirements
from tests.node.world import NODE, NodeWorld, machine_file, node_labels, wait_until
from tests.real.world import ADMIN_TOKEN, AUDIENCE, CHART

SCENARIO = "host-split"
RELEASE = "gpu-slots"
NAMESPACE = "gpu-slots"
# No CoreDNS on this air-gapped node (its image is not here): the dashboard's Service gets a
# fixed ClusterIP and the agents post to it (docs/INSTALL.md, "Without cluster DNS").
DASHBOARD_IP = "10.43.0.80"
DASHBOARD_URL = f"http://{DASHBOARD_IP}:8000"


@dataclass(frozen=True)
class ServiceDashboard:
    """The chart's dashboard pod, reached through its Service's ClusterIP (kube-proxy)."""

    url: str


def chart_values() -> dict[str, Any]:
    registry, repository = IMAGE.split(":")[0].split("/", 1)
    return {
        "image": {
            "registry": registry,
            "repository": repository,
            "tag": IMAGE.split(":")[1],
            "pullPolicy": "Never",
        },
        "auth": {"adminToken": ADMIN_TOKEN, "agentTokenAudience": AUDIENCE},
        "service": {"clusterIP": DASHBOARD_IP},
        "agent": {
            "dashboardUrl": DASHBOARD_URL,
            "interval": "2s",
            "podResources": {"enabled": True},  # which GPU each pod holds, from the kubelet
        },
    }


def helm_chart_manifest(folder: Path) -> str:
    """The `HelmChart` a k3s user drops into `server/manifests/`: the packaged chart inline."""
    done = subprocess.run(
        [str(kube_tools().helm), "package", str(CHART), "--destination", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    archive = Path(done.stdout.strip().rsplit(" ", 1)[-1])
    manifest = {
        "apiVersion": "helm.cattle.io/v1",
        "kind": "HelmChart",
        "metadata": {"name": RELEASE, "namespace": "kube-system"},
        "spec": {
            "chartContent": base64.b64encode(archive.read_bytes()).decode(),
            "targetNamespace": NAMESPACE,
            "createNamespace": True,
            "valuesContent": yaml.safe_dump(chart_values()),
        },
    }
    return yaml.safe_dump(manifest)


def ready_pods(world: NodeWorld) -> dict[str, dict[str, Any]] | None:
    """The release's pods by component, once the dashboard and the agent are both Ready."""
    pods = [p for p in world.pods(NAMESPACE) if not p["metadata"].get("deletionTimestamp")]
    by_component = {p["metadata"]["labels"].get("app.kubernetes.io/component"): p for p in pods}
    if set(by_component) != {"dashboard", "agent"} or len(pods) != 2:
        return None
    for pod in pods:
        conditions = (pod.get("status") or {}).get("conditions") or []
        if not any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return None
    return {str(k): v for k, v in by_component.items()}


def explain(world: NodeWorld, namespace: str = NAMESPACE) -> str:
    """Pods, events and the ends of the pods' logs (for a failure message)."""
    lines = []
    for pod in world.pods(namespace):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        lines.append(f"{pod['metadata']['name']}: {[s.get('state') for s in statuses]}")
    with world.plane.http() as http:
        events = http.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    lines += [f"event {e['involvedObject']['name']}: {e.get('message')}" for e in events[-12:]]
    for log in sorted(Path("/var/log/pods").glob(f"{namespace}_*/*/*.log")):
        kept = [
            line for line in log.read_text(errors="replace").splitlines() if "access" not in line
        ]
        lines.append(f"== {log.parent.parent.name}\n" + "\n".join(kept[-12:]))
    return "\n".join(lines)


def fresh_report(world: NodeWorld) -> dict[str, Any] | None:
    try:
        view = world.node_view()
    except (httpx.HTTPError, ValueError, KeyError):
        return None
    return view if (view.get("agent") or {}).get("fresh") else None


def _requirements() -> str | None:
    return missing_requirements() or image_requirements()


@pytest.fixture(scope="package")
def k3s_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[K3sNode]:
    """k3s running air-gapped with the four images imported; no chart yet.

    Package-scoped: k3s stops (and frees the node's lock) before tests/node starts."""
    reason = _requirements()
    if reason:
        pytest.skip(reason)
    try:
        binaries = node_binaries()
        k3s = k3s_binary()
    except NodeUnavailable as exc:
        pytest.skip(f"k3s tier: {exc}")
    folder = tmp_path_factory.mktemp("k3s")
    images = folder / "images"
    images.mkdir()
    try:
        ours = build_image(images / "gpu-slots.tar")
    except RuntimeError as exc:
        if "run '" in str(exc):  # the base or the wheelhouse not made by `make tools`
            pytest.skip(str(exc))
        raise
    archives = [
        pause_image(images, binaries.pause),
        plugin_image(
            images,
            plugin=binaries.device_plugin,
            config_manager=binaries.config_manager,
            mock_nvml=binaries.mock_nvml,
        ),
        helm_job_image(images),
        ours,
    ]
    try:
        node = start_k3s(
            k3s,
            folder / "node",
            name=NODE,
            labels=node_labels(SCENARIO, NODE),
            images=archives,
            mock_nvml=binaries.mock_nvml,
            machine_file=MACHINE_FILE,
            pause_image=PAUSE_IMAGE,
            helm_job_image=HELM_JOB_IMAGE,
        )
    except NodeSkipped as exc:
        pytest.skip(str(exc))
    try:
        Path(MACHINE_FILE).write_text(json.dumps(machine_file(SCENARIO, NODE)))
        yield node
    finally:
        node.stop()
    left = node.leftovers()
    assert not left, f"k3s left this on the machine: {left}"


@pytest.fixture(scope="package")
def node_world(k3s_node: K3sNode) -> NodeWorld:
    """The chart installed by k3s's helm-controller from a HelmChart manifest; both pods Ready."""
    node = k3s_node
    world = NodeWorld(node.plane, node, ServiceDashboard(DASHBOARD_URL), Path(MACHINE_FILE))
    node.manifests.mkdir(parents=True, exist_ok=True)
    (node.manifests / "gpu-slots.yaml").write_text(helm_chart_manifest(node.folder))
    wait_until(
        lambda: ready_pods(world),
        what="the dashboard and agent pods from our image Ready (installed by the HelmChart)",
        timeout_s=300,
        explain=lambda: (
            f"{explain(world, 'kube-system')}\n{explain(world)}\n{node.log('k3s')[-3000:]}"
        ),
    )
    wait_until(
        lambda: fresh_report(world),
        what="the agent pod's report on the dashboard pod, through the Service",
        timeout_s=90,
        explain=lambda: explain(world),
    )
    return world
