"""Our image, built offline, runs the chart on the real node and reads it.

The image comes from the project's Dockerfile over a Debian-made base and a wheelhouse,
with no registry and no network (`scripts/build-image-offline.sh`); containerd imports it;
real helm installs the chart from it; a real kube-proxy carries the pods' traffic to the
API server's ClusterIP and to the dashboard's Service. The dashboard pod answers /readyz,
the agent pod's report (NVML through the mock library, mounted as the NVIDIA toolkit
mounts the driver's) shows on it, and its expected slots equal the real kubelet's. The image
leaves the simulator out: its `demo` and `simulate` say so, run by the node's containerd.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.node.build import node_binaries
from tests.node.chart_image import (
    DASHBOARD_URL,
    IMAGE,
    IMAGE_NAMESPACE,
    build_image,
    image_requirements,
    install,
    uninstall,
)
from tests.node.proxy import start_kube_proxy, start_workload_controllers
from tests.node.world import NODE, NodeWorld, seed_objects, wait_until
from tests.real.build import control_plane_binaries


def _ready_pods(world: NodeWorld) -> dict[str, dict[str, Any]] | None:
    """The release's pods by component, once each is Ready."""
    pods = world.pods(IMAGE_NAMESPACE)
    by_component = {p["metadata"]["labels"].get("app.kubernetes.io/component"): p for p in pods}
    if set(by_component) != {"dashboard", "agent"} or len(pods) != 2:
        return None
    for pod in pods:
        conditions = (pod.get("status") or {}).get("conditions") or []
        if not any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return None
    return {str(k): v for k, v in by_component.items()}


def _explain(world: NodeWorld) -> str:
    """The release's pods, their events and the ends of their logs (for a failure message)."""
    lines = []
    for pod in world.pods(IMAGE_NAMESPACE):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        lines.append(f"{pod['metadata']['name']}: {[s.get('state') for s in statuses]}")
    with world.plane.http() as http:
        events = http.get(f"/api/v1/namespaces/{IMAGE_NAMESPACE}/events").json()["items"]
    lines += [f"event {e['involvedObject']['name']}: {e.get('message')}" for e in events[-10:]]
    for log in sorted((world.node.folder / "pod-logs").glob(f"{IMAGE_NAMESPACE}_*/*/*.log")):
        kept = [
            line for line in log.read_text(errors="replace").splitlines() if "access" not in line
        ]
        lines.append(f"== {log.parent.parent.name}\n" + "\n".join(kept[-12:]))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def image_world(
    node_world: NodeWorld, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[NodeWorld, str]]:
    reason = image_requirements()
    if reason:
        pytest.skip(reason)
    world = node_world
    folder = tmp_path_factory.mktemp("image")
    try:
        archive = build_image(folder / "gpu-slots.tar")
    except RuntimeError as exc:
        if "run '" in str(exc):  # the base or the wheelhouse not made by `make tools`
            pytest.skip(str(exc))
        raise
    world.node.import_image(archive)
    controllers = start_workload_controllers(
        world.plane, control_plane_binaries().controller_manager, folder
    )
    proxy = start_kube_proxy(world.plane, node_binaries().kube_proxy, folder / "proxy", NODE)
    try:
        install(world.plane)
        url = DASHBOARD_URL
        wait_until(
            lambda: _ready_pods(world),
            what="the dashboard and agent pods from our image Ready",
            timeout_s=180,
            explain=lambda: f"{_explain(world)}\n{proxy.log()[-1500:]}",
        )
        yield world, url
    finally:
        try:
            uninstall(world.plane)
            wait_until(
                lambda: not world.pods(IMAGE_NAMESPACE),
                what="the release's pods gone",
                timeout_s=90,
            )
        finally:
            proxy.stop()
            controllers.terminate()
            controllers.wait(timeout=30)
    left = proxy.leftovers()
    assert not left, f"kube-proxy left this on the machine: {left}"


def test_chart_from_offline_image_serves_readyz_and_the_agent_report(
    image_world: tuple[NodeWorld, str],
) -> None:
    world, url = image_world
    pods = _ready_pods(world)
    assert pods is not None
    for pod in pods.values():
        (status,) = pod["status"]["containerStatuses"]
        assert status["image"].endswith(IMAGE.removeprefix("localhost/")), status
        assert pod["spec"]["nodeName"] == NODE

    ready = httpx.get(f"{url}/readyz", timeout=10)
    assert ready.status_code == 200, ready.text

    def reported() -> dict[str, Any] | None:
        nodes = httpx.get(f"{url}/api/v1/nodes", timeout=10).json()["nodes"]
        view = next((n for n in nodes if n["name"] == NODE), None)
        agent = (view or {}).get("agent") or {}
        return view if agent.get("fresh") else None

    view = wait_until(reported, what="the agent pod's report on the dashboard pod", timeout_s=60)
    # The agent read the node's four GPUs through NVML (the mock library) in its pod.
    assert view["physical_gpus"] == 4, view


def _run_in_image(world: NodeWorld, name: str, *command: str) -> subprocess.CompletedProcess[str]:
    """`command` in a container of our image, run by the node's containerd and runc."""
    ctr = ["ctr", "--address", str(world.node.containerd_socket), "-n", "k8s.io"]
    return subprocess.run(
        [*ctr, "run", "--rm", IMAGE, name, *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_image_leaves_the_simulator_out_and_its_commands_say_so(
    image_world: tuple[NodeWorld, str],
) -> None:
    """The image has no app.simulator (the wheel keeps it): `demo` and `simulate` answer one
    sentence and exit 2, no traceback; the dashboard it serves is the pod above, Ready."""
    world, url = image_world
    probe = "import importlib.util as u, app.web.server; print(u.find_spec('app.simulator'))"
    found = _run_in_image(world, "gpu-slots-no-simulator", "python", "-c", probe)
    assert (found.returncode, found.stdout.strip()) == (0, "None"), found.stderr
    for command in ("demo", "simulate"):
        done = _run_in_image(world, f"gpu-slots-{command}", "gpu-slots", command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"gpu-slots {command}: this installation has no simulator" in done.stderr
        assert "Traceback" not in done.stderr
    assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200


def test_dashboard_pod_expected_slots_equal_real_allocatable(
    image_world: tuple[NodeWorld, str], clean_node: NodeWorld
) -> None:
    world, url = image_world
    world.apply(seed_objects("host-split"))

    def agreed() -> dict[str, Any] | None:
        if world.allocatable() != "2" or not world.plugin_rolled():
            return None
        nodes = httpx.get(f"{url}/api/v1/nodes", timeout=10).json()["nodes"]
        view = next((n for n in nodes if n["name"] == NODE), {})
        return view if str(view.get("expected_slots")) == "2" else None

    view = wait_until(
        agreed,
        what="the real kubelet's nvidia.com/gpu: 2 and the dashboard pod's expected 2",
        timeout_s=120,
    )
    assert (view["mode"], view["visible_gpus"]) == ("basic", 2), view
