"""The Helm chart's install with config-manager: a node's config is its label, on the real node.

Two inputs, each with the config-manager init container and sidecar beside the plugin
(`shareProcessNamespace`) and a ConfigMap of named configs: NVIDIA's own chart rendered
(`timeslicing-per-node-with-gfd.yaml` of the shared real fixtures, chart v0.20.0: keys
`default` and `ts-4`; skipped where that folder is absent) and the `clusters` scenario's
chart-made objects (keys `default` and `ts4`). They run on the real kubelet with the real
config-manager v0.19.3 built from the plugin's module: it reads the node's
`nvidia.com/device-plugin.config` label from the API server in its pod (through the
`kubernetes` Service: a real kube-proxy), links the chosen key to the plugin's CONFIG_FILE
and SIGHUPs the plugin when the label changes.

What changes for a machine without a registry, a GPU or a GPU Operator: the images are ours
(the plugin's image carries both binaries), the objects live in `kube-system` (where the
tier's dashboard reads plugin configs); the render's MPS and CDI hostPath volumes are
dropped (they would create `/run/nvidia/mps` and `/var/run/cdi` on the machine, and no MPS
daemon or CDI runs here); the scenario's node selector is dropped (the real node is the
tier's) and so is its `MIG_STRATEGY=mixed` (the real plugin then asks NVML for GPU
instance profiles, which the mock library does not serve: it exits); the scenario's pod
gets a ServiceAccount allowed to read Nodes, as the chart's is.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from app.domain.plugin.daemonset import NODE_CONFIG_LABEL
from app.simulator.world.scenario import read_scenario
from tests.node.build import node_binaries
from tests.node.images import PLUGIN_IMAGE
from tests.node.proxy import KubeProxy, start_kube_proxy
from tests.node.world import NODE, PLUGIN_NS, NodeWorld, wait_until
from tests.real_fixtures import REAL_FIXTURES

RELEASE_NS = "nvidia-device-plugin"  # the namespace both inputs were made for
RENDER = "nvidia-device-plugin-chart/rendered/timeslicing-per-node-with-gfd.yaml"
RENDER_RELEASE = "nvdp-nvidia-device-plugin"  # `helm template nvdp ...`
RENDER_OBJECTS = {  # the plugin's own (not GFD's, MPS's or NFD's): kind -> name
    "ServiceAccount": f"{RENDER_RELEASE}-service-account",
    "ClusterRole": f"{RENDER_RELEASE}-role",
    "ClusterRoleBinding": f"{RENDER_RELEASE}-role-binding",
    "ConfigMap": f"{RENDER_RELEASE}-configs",
    "DaemonSet": RENDER_RELEASE,
}
HOST_FOLDERS = ("mps-root", "mps-shm", "cdi-root")  # the render's volumes dropped here
ACCOUNT = "nvidia-device-plugin-service-account"


@dataclass(frozen=True)
class Install:
    objects: list[dict[str, Any]]
    daemonset: str
    time_slicing_key: str  # the ConfigMap key with time-slicing, 4 replicas


def _local(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` in the plugin's namespace here, its containers on our plugin image."""
    obj = copy.deepcopy(obj)
    if "namespace" in obj["metadata"]:
        obj["metadata"]["namespace"] = PLUGIN_NS
    for subject in obj.get("subjects") or []:
        subject["namespace"] = PLUGIN_NS
    if obj["kind"] == "DaemonSet":
        spec = obj["spec"]["template"]["spec"]
        for container in (*spec["initContainers"], *spec["containers"]):
            container["image"] = PLUGIN_IMAGE
    return obj


def _render_install() -> Install:
    """The chart's own render: its ServiceAccount, role, binding, ConfigMap and DaemonSet."""
    path = REAL_FIXTURES / RENDER
    if not path.exists():
        pytest.skip(f"real artifact {path} absent (the shared fixtures folder is not here)")
    found = [
        _local(d)
        for d in yaml.safe_load_all(path.read_text())
        if d and RENDER_OBJECTS.get(d["kind"]) == d["metadata"]["name"]
    ]
    assert sorted(o["kind"] for o in found) == sorted(RENDER_OBJECTS), found
    (daemonset,) = [d for d in found if d["kind"] == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in HOST_FOLDERS]
    for container in spec["containers"]:
        mounts = container.get("volumeMounts") or []
        container["volumeMounts"] = [m for m in mounts if m["name"] not in HOST_FOLDERS]
    return Install(found, daemonset["metadata"]["name"], "ts-4")


def _account() -> list[dict[str, Any]]:
    """A ServiceAccount that may read Nodes (the chart's role, as config-manager needs)."""
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": PLUGIN_NS},
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": ACCOUNT},
            "rules": [
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ACCOUNT},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": ACCOUNT,
            },
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": PLUGIN_NS}],
        },
    ]


def _scenario_install() -> Install:
    """The `clusters` scenario's chart-made ConfigMap and DaemonSet."""
    found = [
        _local(o)
        for o in read_scenario("clusters").objects
        if o["kind"] in ("ConfigMap", "DaemonSet") and o["metadata"]["namespace"] == RELEASE_NS
    ]
    (daemonset,) = [d for d in found if d["kind"] == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    spec.pop("nodeSelector")
    spec["serviceAccountName"] = ACCOUNT
    for container in (*spec["initContainers"], *spec["containers"]):
        container["env"] = [e for e in container["env"] if e["name"] != "MIG_STRATEGY"]
    return Install([*_account(), *found], daemonset["metadata"]["name"], "ts4")


INSTALLS: dict[str, Callable[[], Install]] = {
    "chart-render": _render_install,
    "clusters-scenario": _scenario_install,
}


@pytest.fixture(scope="module")
def pod_network(node_world: NodeWorld, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A real kube-proxy, so that config-manager reaches the API server from its pod."""
    folder = tmp_path_factory.mktemp("config-manager")
    proxy: KubeProxy = start_kube_proxy(
        node_world.plane, node_binaries().kube_proxy, folder / "proxy", NODE
    )
    try:
        yield
    finally:
        proxy.stop()
    left = proxy.leftovers()
    assert not left, f"kube-proxy left this on the machine: {left}"


def _label(world: NodeWorld, value: str) -> None:
    with world.plane.http() as http:
        http.patch(
            f"/api/v1/nodes/{NODE}",
            json={"metadata": {"labels": {NODE_CONFIG_LABEL: value}}},
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()


def _explain(world: NodeWorld) -> str:
    lines = []
    for pod in world.pods(PLUGIN_NS):
        status = pod.get("status") or {}
        states = [
            (s["name"], s.get("state"), s.get("restartCount"))
            for s in (status.get("initContainerStatuses") or [])
            + (status.get("containerStatuses") or [])
        ]
        lines.append(f"{pod['metadata']['name']}: {states}")
    for log in sorted((world.node.folder / "pod-logs").glob(f"{PLUGIN_NS}_*/*/*.log")):
        kept = log.read_text(errors="replace").splitlines()[-8:]
        lines.append(f"== {log.parent.parent.name}/{log.parent.name}\n" + "\n".join(kept))
    return "\n".join(lines)


def _agreed(world: NodeWorld, value: str) -> dict[str, Any] | None:
    """The dashboard's node view once the real allocatable is `value` and both agree."""
    if world.allocatable() != value:
        return None
    view = world.node_view()
    return view if str(view.get("expected_slots")) == value else None


@pytest.mark.parametrize("source", sorted(INSTALLS))
def test_config_manager_label_switch_expected_slots_equal_real_allocatable(
    source: str, pod_network: None, clean_node: NodeWorld
) -> None:
    install = INSTALLS[source]()
    world = clean_node
    world.apply(install.objects)

    # No label: the key `default` (the render's DEFAULT_CONFIG, the scenario's named fallback):
    # basic, 4 GPUs, 4 slots.
    view = wait_until(
        lambda: _agreed(world, "4"),
        what="the real kubelet's nvidia.com/gpu: 4 and the dashboard's expected 4 (key default)",
        timeout_s=150,
        explain=lambda: _explain(world),
    )
    assert (view["mode"], view["physical_gpus"]) == ("basic", 4), view

    # The label names the time-slicing key: the sidecar relinks CONFIG_FILE, SIGHUPs the plugin.
    _label(world, install.time_slicing_key)
    view = wait_until(
        lambda: _agreed(world, "16"),
        what="4 GPUs x 4 replicas after the label switch: the real 16 and the dashboard's 16",
        timeout_s=90,
        explain=lambda: _explain(world),
    )
    assert (view["mode"], view["replicas"]) == ("time-slicing", 4), view
    (pod,) = [
        p
        for p in world.pods(PLUGIN_NS)
        if p["metadata"].get("generateName") == f"{install.daemonset}-"
    ]
    restarts = [s["restartCount"] for s in pod["status"]["containerStatuses"]]
    assert restarts == [0, 0], "config-manager reloads in place: no container restarted"
