"""One real GPU node for the tier: control plane, containerd + kubelet, chart, dashboard, agent.

Order of set-up: build (cached) -> etcd + kube-apiserver + scheduler + controllers -> the
test images (pause; the real device plugin over the mock NVML library) -> containerd + the
kubelet as `gpu-server-1` (Ready) -> the node's machine file (the GPUs of the `host-split`
scenario) in the kubelet's device-plugins folder, where the plugin's pod and our agent both
read it -> RuntimeClass `nvidia` -> real helm installs the chart -> the dashboard runs
with the chart's ServiceAccount -> our agent runs on the host through the mock library and the real
kubelet's PodResources socket, with a token bound to the chart's agent pod on the node.
The seed's plugin DaemonSet is applied by each test. Torn down in reverse; the node then
must have left nothing on the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.domain.changes.split_models import NODE_LABEL
from app.domain.plugin.daemonset import NODE_CONFIG_LABEL
from tests.node.build import NodeUnavailable, node_binaries
from tests.node.images import MACHINE_FILE, pause_image, plugin_image
from tests.node.machine_state import KUBELET_ROOT, NodeSkipped, missing_requirements
from tests.node.node import start_node
from tests.node.world import NODE, NodeWorld, machine_file, node_labels, wait_until
from tests.real.build import control_plane_binaries
from tests.real.controlplane import ControlPlane, running_control_plane
from tests.real.world import (
    AUDIENCE,
    NAMESPACE,
    install_chart,
    service_account_token,
    start_dashboard,
)

SCENARIO = "host-split"
DASHBOARD_ACCOUNT = "gpu-slots-dashboard"
AGENT_INTERVAL = "1s"


def _bound_agent_token(plane: ControlPlane, namespace: str) -> str | None:
    """A token of the chart's agent pod on the node, bound to that pod (as the kubelet mounts)."""
    with plane.http() as http:
        pods = http.get(
            f"/api/v1/namespaces/{namespace}/pods",
            params={
                "labelSelector": "app.kubernetes.io/component=agent",
                "fieldSelector": f"spec.nodeName={NODE}",
            },
        ).json()["items"]
        if not pods:
            return None
        pod = pods[0]
        account = pod["spec"].get("serviceAccountName") or "default"
        answer = http.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            json={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    "audiences": [AUDIENCE],
                    "expirationSeconds": 3600,
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "uid": pod["metadata"]["uid"],
                    },
                },
            },
        )
    answer.raise_for_status()
    return str(answer.json()["status"]["token"])


@pytest.fixture(scope="session")
def node_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeWorld]:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    try:
        binaries = node_binaries()
    except NodeUnavailable as exc:
        pytest.skip(f"real-node tier: {exc}")
    folder = tmp_path_factory.mktemp("real-node")
    machine = machine_file(SCENARIO, NODE)
    images = folder / "images"
    images.mkdir()
    archives = [
        pause_image(images, binaries.pause),
        plugin_image(
            images,
            plugin=binaries.device_plugin,
            config_manager=binaries.config_manager,
            mock_nvml=binaries.mock_nvml,
        ),
    ]
    with running_control_plane(control_plane_binaries(), folder / "plane") as plane:
        try:
            node = start_node(
                plane,
                binaries,
                folder / "node",
                name=NODE,
                labels=node_labels(SCENARIO, NODE),
                images=archives,
            )
        except NodeSkipped as exc:
            pytest.skip(str(exc))
        agent: subprocess.Popen[bytes] | None = None
        agent_log = open(folder / "agent.log", "wb")  # noqa: SIM115 - closed below
        dashboard = None
        try:
            with plane.http() as http:
                http.post(
                    "/apis/node.k8s.io/v1/runtimeclasses",
                    json={
                        "apiVersion": "node.k8s.io/v1",
                        "kind": "RuntimeClass",
                        "metadata": {"name": "nvidia"},
                        "handler": "nvidia",
                    },
                ).raise_for_status()
            install_chart(plane, config_namespaces=["kube-system"])
            token = service_account_token(plane, NAMESPACE, DASHBOARD_ACCOUNT)
            dashboard = start_dashboard(plane, folder / "dashboard", token=token)
            machine_path = Path(MACHINE_FILE)  # the kubelet emptied its folder at start
            machine_path.write_text(json.dumps(machine))
            token_file = folder / "agent-token"
            token_file.write_text(
                wait_until(
                    lambda: _bound_agent_token(plane, NAMESPACE),
                    what="the chart's agent pod bound to the node",
                    timeout_s=60,
                )
            )
            command = shutil.which("gpu-slots", path=str(Path(sys.executable).parent))
            agent = subprocess.Popen(
                [
                    command or "gpu-slots",
                    "agent",
                    "--dashboard",
                    dashboard.url,
                    "--token-file",
                    str(token_file),
                    "--node",
                    NODE,
                    "--interval",
                    AGENT_INTERVAL,
                    "--pod-resources-socket",
                    str(node.pod_resources_socket),
                ],
                stdout=agent_log,
                stderr=subprocess.STDOUT,
                env={
                    **{k: v for k, v in os.environ.items() if not k.startswith("GEO_MLOPS_")},
                    "LD_LIBRARY_PATH": str(binaries.mock_nvml.parent),
                    "GPU_SLOTS_MOCK_NVML_CONFIG": str(machine_path),
                },
            )
            world = NodeWorld(plane, node, dashboard, machine_path)
            wait_until(
                lambda: (world.node_view().get("agent") or {}).get("fresh"),
                what=f"a fresh agent report from the real node (agent.log: {folder / 'agent.log'})",
                timeout_s=60,
            )
            yield world
        finally:
            if agent is not None:
                agent.terminate()
                agent.wait(timeout=30)
            agent_log.close()
            if dashboard is not None:
                dashboard.stop()
            node.stop()
        left = node.leftovers()
        assert not left, f"the real node left this on the machine: {left}"


@pytest.fixture
def clean_node(node_world: NodeWorld) -> NodeWorld:
    """No plugin DaemonSet, no plugin ConfigMap, no config label, no workload at a test's start."""
    with node_world.plane.http() as http:
        for kind in (
            "apis/apps/v1/namespaces/kube-system/daemonsets",
            "api/v1/namespaces/kube-system/configmaps",
        ):
            for item in http.get(f"/{kind}").json().get("items") or []:
                name = item["metadata"]["name"]
                if "nvidia-device-plugin" in name:  # the seed's, a split's, the chart's
                    http.delete(f"/{kind}/{name}")
    for namespace in ("ml",):
        if node_world.pods(namespace):
            node_world.delete_pods(namespace)
    wait_until(
        lambda: (
            not [
                p
                for p in node_world.pods("kube-system")
                if "nvidia-device-plugin" in p["metadata"]["name"]
            ]
        ),
        what="the plugin's pod gone",
        timeout_s=90,
    )
    # The labels only once no plugin runs: config-manager answers a label change by restarting
    # the plugin (SIGHUP), and a plugin re-registering while its pod is killed can leave this
    # kubelet (v1.35) advertising its devices for good (kubernetes/kubernetes#121994).
    with node_world.plane.http() as http:
        http.patch(  # a split's or config-manager's label, should a test have left one
            f"/api/v1/nodes/{NODE}",
            json={"metadata": {"labels": {NODE_LABEL: None, NODE_CONFIG_LABEL: None}}},
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
    # Until the kubelet's status says so, the scheduler would still place GPU pods here and
    # the kubelet reject them (no healthy devices) before the next plugin registers.
    if not _advertises_nothing(node_world, within_s=45) and not _plugin_sockets():
        # No plugin left, yet its devices advertised: the kubelet's lost registration
        # (kubernetes/kubernetes#121994; docs/TESTING.md), which only a restart clears.
        KUBELET_RESTARTS.append(f"{datetime.now(UTC):%H:%M:%S} {node_world.allocatable()}")
        node_world.node.restart_kubelet()
    wait_until(
        lambda: node_world.allocatable() in (None, "0"),
        what="the real node advertising no nvidia.com/gpu once the plugin is gone",
        timeout_s=90,
        explain=lambda: _plugin_leftovers(node_world),
    )
    return node_world


KUBELET_RESTARTS: list[str] = []  # when the reset restarted the kubelet, and what it advertised


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say every kubelet restart at the end of the run, passing or not (docs/TESTING.md)."""
    if KUBELET_RESTARTS:
        terminalreporter.section("real node: kubelet restarts (kubernetes/kubernetes#121994)")
        for line in KUBELET_RESTARTS:
            terminalreporter.line(f"restarted at {line} advertised before")


def _advertises_nothing(world: NodeWorld, *, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if world.allocatable() in (None, "0"):
            return True
        time.sleep(0.5)
    return False


def _plugin_sockets() -> list[str]:
    """The device plugins' sockets in the kubelet's folder (not the kubelet's own)."""
    folder = KUBELET_ROOT / "device-plugins"
    return sorted(p.name for p in folder.glob("*.sock") if p.name != "kubelet.sock")


def _plugin_leftovers(world: NodeWorld) -> str:
    """What still makes the kubelet advertise GPUs: sockets, processes, its own log lines."""
    sockets = sorted(p.name for p in (KUBELET_ROOT / "device-plugins").glob("*"))
    processes = subprocess.run(
        ["ps", "-eo", "pid,ppid,stat,etime,args"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    plugin = [
        line for line in processes if "nvidia-device-plugin" in line or "config-manager" in line
    ]
    kubelet = [
        line
        for line in world.node.log("kubelet").splitlines()
        if "plugin" in line.lower() or "nvidia.com" in line
    ][-40:]
    return "\n".join(
        [
            f"allocatable: {world.allocatable()}, device-plugins/: {sockets}",
            "processes:",
            *plugin,
            "kubelet:",
            *kubelet,
        ]
    )
