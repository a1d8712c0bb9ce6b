"""The Helm chart's install with config-manager: a node's config is its label, on the real node.

The `clusters` scenario's chart-made objects (the ConfigMap of named configs `default` and
`ts4`, the DaemonSet with the config-manager init container and sidecar beside the plugin,
`shareProcessNamespace`) run on the real kubelet with the real config-manager v0.19.3 built
from the plugin's module. config-manager reads the node's `nvidia.com/device-plugin.config`
label from the API server in its pod (through the `kubernetes` Service: a real kube-proxy),
links the chosen key to the plugin's CONFIG_FILE and SIGHUPs the plugin when the label
changes. What changes for a machine without a registry: the images are ours (the plugin's
image carries both binaries), the objects live in `kube-system` (where the tier's dashboard
reads plugin configs) and the pod runs on a ServiceAccount allowed to read Nodes, as the
chart's is; the scenario's node selector is dropped (the real node is the tier's), and so
is its `MIG_STRATEGY=mixed`: with it the real plugin asks NVML for GPU instance profiles,
which the mock library does not serve (NVML_ERROR_FUNCTION_NOT_FOUND, and the plugin exits).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from app.domain.plugin.daemonset import NODE_CONFIG_LABEL
from app.simulator.world.scenario import read_scenario
from tests.node.build import node_binaries
from tests.node.images import PLUGIN_IMAGE
from tests.node.proxy import KubeProxy, start_kube_proxy
from tests.node.world import NODE, PLUGIN_NS, NodeWorld, wait_until

RELEASE_NS = "nvidia-device-plugin"  # the scenario's chart release namespace
ACCOUNT = "nvidia-device-plugin-service-account"
DAEMONSET = "nvidia-device-plugin"  # the scenario's release name


def _chart_objects() -> list[dict[str, Any]]:
    """The scenario's chart-made ConfigMap and DaemonSet, adapted to the real node."""
    found = [
        copy.deepcopy(o)
        for o in read_scenario("clusters").objects
        if o["kind"] in ("ConfigMap", "DaemonSet") and o["metadata"]["namespace"] == RELEASE_NS
    ]
    assert [o["kind"] for o in found] == ["ConfigMap", "DaemonSet"], found
    for obj in found:
        obj["metadata"]["namespace"] = PLUGIN_NS
    spec = found[1]["spec"]["template"]["spec"]
    spec.pop("nodeSelector")
    spec["serviceAccountName"] = ACCOUNT
    for container in (*spec["initContainers"], *spec["containers"]):
        container["image"] = PLUGIN_IMAGE
        # The mock serves no MIG profile calls (the plugin's mixed strategy asks for them).
        container["env"] = [e for e in container["env"] if e["name"] != "MIG_STRATEGY"]
    return found


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


def test_config_manager_label_switch_expected_slots_equal_real_allocatable(
    pod_network: None, clean_node: NodeWorld
) -> None:
    world = clean_node
    world.apply([*_account(), *_chart_objects()])

    # No label: config-manager falls back to the key `default` (basic): 4 GPUs, 4 slots.
    view = wait_until(
        lambda: _agreed(world, "4"),
        what="the real kubelet's nvidia.com/gpu: 4 and the dashboard's expected 4 (key default)",
        timeout_s=150,
        explain=lambda: _explain(world),
    )
    assert (view["mode"], view["physical_gpus"]) == ("basic", 4), view

    # The label names `ts4`: the sidecar relinks CONFIG_FILE and SIGHUPs the plugin in place.
    _label(world, "ts4")
    view = wait_until(
        lambda: _agreed(world, "16"),
        what="4 GPUs x 4 replicas after the label switch: the real 16 and the dashboard's 16",
        timeout_s=90,
        explain=lambda: _explain(world),
    )
    assert (view["mode"], view["replicas"]) == ("time-slicing", 4), view
    (pod,) = [
        p for p in world.pods(PLUGIN_NS) if p["metadata"].get("generateName") == f"{DAEMONSET}-"
    ]
    restarts = [s["restartCount"] for s in pod["status"]["containerStatuses"]]
    assert restarts == [0, 0], "config-manager reloads in place: no container restarted"
