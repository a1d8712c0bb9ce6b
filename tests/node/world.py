"""The seed's manifests on the real node, and what the tests read back from both sides.

The seed's objects come from the built-in scenarios (`host-split`: basic mode, the plugin
limited by `NVIDIA_VISIBLE_DEVICES` to GPUs 2-3 of the four-GPU server; the time-slicing
ConfigMap and DaemonSet edit of the seed manual), with two changes only a machine without
a registry needs: the plugin's image is ours (the real plugin over the mock library) and
workload containers run `pause`. Pods are left to the real scheduler.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx

from app.simulator.world.scenario import read_scenario
from tests.node.images import PAUSE_IMAGE, PLUGIN_IMAGE
from tests.node.node import RealNode
from tests.real.controlplane import ControlPlane
from tests.real.world import ADMIN_TOKEN

T = TypeVar("T")
NODE = "gpu-server-1"
PLUGIN_NS = "kube-system"
PLUGIN_DS = "nvidia-device-plugin-daemonset"
CONFIGMAP = "nvidia-device-plugin-config"


def wait_until(
    probe: Callable[[], T | None],
    *,
    what: str,
    timeout_s: float = 120,
    explain: Callable[[], object] | None = None,
) -> T:
    """Poll `probe` (every 0.5 s) until it returns something truthy; fail after `timeout_s`.

    `explain` adds what the failure message should show (a pod's status, a log)."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.5)
    extra = f"\n{explain()}" if explain is not None else ""
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: last={last!r}{extra}")


def machine_file(scenario: str, node: str) -> dict[str, Any]:
    """The mock library's machine file for `node` of a scenario: its GPUs, by UUID."""
    inventory = next(i for i in read_scenario(scenario).inventories if i.node == node)
    return {
        "gpus": [
            {
                "model": "A100-SXM4-80GB",
                "name": gpu.name,
                "uuid": gpu.uuid,
                "memoryMiB": gpu.memory_total_mib,
            }
            for gpu in inventory.gpus
        ]
    }


def node_labels(scenario: str, node: str) -> dict[str, str]:
    found = next(o for o in read_scenario(scenario).node_objects if o["metadata"]["name"] == node)
    labels: dict[str, str] = found["metadata"].get("labels") or {}
    return {k: v for k, v in labels.items() if not k.startswith("node-role.kubernetes.io/")}


def _local_images(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if obj["kind"] == "DaemonSet":
        for container in obj["spec"]["template"]["spec"]["containers"]:
            container["image"] = PLUGIN_IMAGE
    if obj["kind"] == "Pod":
        obj["spec"].pop("nodeName", None)
        for container in obj["spec"]["containers"]:
            container["image"] = PAUSE_IMAGE
            container.pop("command", None)
            container.pop("args", None)
        obj["spec"]["terminationGracePeriodSeconds"] = 1
    return obj


def seed_objects(scenario: str) -> list[dict[str, Any]]:
    """The scenario's objects, images local; Nodes and Events are the real node's own."""
    return [
        _local_images(o)
        for o in read_scenario(scenario).objects
        if o["kind"] in ("Namespace", "ConfigMap", "DaemonSet", "Pod")
    ]


def time_slicing(replicas: int) -> list[dict[str, Any]]:
    """The seed manual's time-slicing edit: the ConfigMap, CONFIG_FILE and its mount."""
    daemonset = next(o for o in seed_objects("host-split") if o["kind"] == "DaemonSet")
    spec = daemonset["spec"]["template"]["spec"]
    container = spec["containers"][0]
    container["env"].append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
    container["volumeMounts"].append({"name": "plugin-config", "mountPath": "/config"})
    spec["volumes"].append({"name": "plugin-config", "configMap": {"name": CONFIGMAP}})
    config = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        f"      - name: nvidia.com/gpu\n        replicas: {replicas}\n"
    )
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": PLUGIN_NS},
        "data": {"config.yaml": config},
    }
    return [configmap, daemonset]


def gpu_pod(name: str, namespace: str = "ml", *, slots: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "resources": {"limits": {"nvidia.com/gpu": str(slots)}},
                }
            ],
        },
    }


def _path(obj: dict[str, Any]) -> str:
    kind, meta = obj["kind"], obj["metadata"]
    plural = {
        "Namespace": "namespaces",
        "ConfigMap": "configmaps",
        "Pod": "pods",
        "ServiceAccount": "serviceaccounts",
    }
    if kind == "DaemonSet":
        return f"/apis/apps/v1/namespaces/{meta['namespace']}/daemonsets"
    if kind in ("ClusterRole", "ClusterRoleBinding"):
        return f"/apis/rbac.authorization.k8s.io/v1/{kind.lower()}s"
    if kind == "Namespace":
        return "/api/v1/namespaces"
    return f"/api/v1/namespaces/{meta['namespace']}/{plural[kind]}"


class Served(Protocol):
    """What the tests use of a dashboard: where it answers (a host process, or a pod's Service)."""

    @property
    def url(self) -> str: ...


@dataclass
class NodeWorld:
    plane: ControlPlane
    node: RealNode  # or tests/k3s's K3sNode
    dashboard: Served
    machine_path: Path  # the host's machine file: what the agent's NVML reads

    # ---- the real side

    def apply(self, objects: list[dict[str, Any]]) -> None:
        """Create each object, or replace it (the real controllers act on the change)."""
        with self.plane.http() as http:
            for obj in objects:
                path = _path(obj)
                created = http.post(path, json=obj)
                if created.status_code != 409:
                    created.raise_for_status()
                    continue
                if obj["kind"] == "Namespace":
                    continue
                url = f"{path}/{obj['metadata']['name']}"
                current = http.get(url).json()
                body = copy.deepcopy(obj)
                body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                http.put(url, json=body).raise_for_status()

    def delete_pods(self, namespace: str) -> None:
        with self.plane.http() as http:
            http.delete(f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": "0"})
        wait_until(
            lambda: not self.pods(namespace),
            what=f"the pods of {namespace} gone from the real node",
            timeout_s=90,
        )

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        with self.plane.http() as http:
            items: list[dict[str, Any]] = (
                http.get(f"/api/v1/namespaces/{namespace}/pods").json().get("items") or []
            )
        return items

    def running(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self.plane.http() as http:
            pod: dict[str, Any] = http.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    def wait_running(self, namespace: str, name: str) -> dict[str, Any]:
        def status() -> object:
            with self.plane.http() as http:
                return http.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json().get("status")

        return wait_until(
            lambda: self.running(namespace, name),
            what=f"{namespace}/{name} Running on the real node",
            explain=status,
        )

    def allocatable(self, resource: str = "nvidia.com/gpu") -> str | None:
        """The real kubelet's allocatable count of `resource` on the node (None: absent)."""
        with self.plane.http() as http:
            status = http.get(f"/api/v1/nodes/{NODE}").json()["status"]
        value = (status.get("allocatable") or {}).get(resource)
        return None if value is None else str(value)

    def plugin_rolled(self) -> bool:
        """The plugin DaemonSet's pods all updated and ready (the real controller's status)."""
        with self.plane.http() as http:
            ds = http.get(f"/apis/apps/v1/namespaces/{PLUGIN_NS}/daemonsets/{PLUGIN_DS}").json()
        status = ds.get("status") or {}
        return (
            status.get("observedGeneration") == ds["metadata"]["generation"]
            and status.get("updatedNumberScheduled") == status.get("desiredNumberScheduled") == 1
            and status.get("numberReady") == 1
        )

    def container_pid(self, namespace: str, pod: str) -> int:
        """The host PID of the pod's first container (from containerd)."""
        found = self.running(namespace, pod)
        assert found is not None, f"{namespace}/{pod} not running"
        container_id = found["status"]["containerStatuses"][0]["containerID"].split("://")[1]
        out = self.node.ctr("tasks", "ls")
        for line in out.splitlines()[1:]:
            task, pid, _status = line.split()[:3]
            if task == container_id:
                return int(pid)
        raise AssertionError(f"no task {container_id} in containerd:\n{out}")

    def set_machine(self, machine: dict[str, Any]) -> None:
        """Rewrite the host's machine file; the mock library re-reads it on change."""
        staged = self.machine_path.with_suffix(".new")
        staged.write_text(json.dumps(machine))
        staged.replace(self.machine_path)

    # ---- our side

    def node_view(self) -> dict[str, Any]:
        nodes = httpx.get(f"{self.dashboard.url}/api/v1/nodes", timeout=10).json()["nodes"]
        return next((n for n in nodes if n["name"] == NODE), {})

    def findings(self) -> list[dict[str, Any]]:
        body = httpx.get(f"{self.dashboard.url}/api/v1/findings", timeout=10).json()
        found: list[dict[str, Any]] = body["findings"]
        return found

    def admin(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        return httpx.request(
            method, f"{self.dashboard.url}{path}", headers=headers, timeout=60, **kwargs
        )
