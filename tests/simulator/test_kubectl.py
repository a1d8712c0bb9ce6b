"""The real kubectl v1.35 against the simulator, and the issue's "Done when" walk-through."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from app.simulator.apiserver.resources import POD
from app.simulator.world.cluster import SimulatedCluster
from tests.live import wait_for
from tests.simulator.conftest import api_client
from tests.simulator.kubectl_cli import CONFIGMAP, DS

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
ALLOC_COLUMNS = r"custom-columns=NAME:.metadata.name,ALLOC:.status.allocatable.nvidia\.com/gpu"


@pytest.fixture(scope="module")
def simulate() -> Iterator[str]:
    """`gpu-slots simulate --scenario host-split` as its own process; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "simulate", "--port", "0", "--scenario", "host-split"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    url = next(word for word in line.split() if word.startswith("http://"))
    yield url
    process.terminate()
    process.wait(timeout=10)
    process.stdout.close()
    assert process.stderr is not None
    process.stderr.close()


def _alloc(kubectl: Kubectl, url: str) -> dict[str, str]:
    out = kubectl(url, "get", "nodes", "-o", ALLOC_COLUMNS).stdout.splitlines()
    assert out[0].split() == ["NAME", "ALLOC"]
    return dict(line.split() for line in out[1:])


def _with_time_slicing(ds: dict[str, Any]) -> dict[str, Any]:
    spec = ds["spec"]["template"]["spec"]
    container = spec["containers"][0]
    container["env"].append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
    container["volumeMounts"].append({"name": "plugin-config", "mountPath": "/config"})
    spec["volumes"].append(
        {"name": "plugin-config", "configMap": {"name": "nvidia-device-plugin-config"}}
    )
    return ds


def test_done_when_kubectl_host_split_time_slicing_and_stale_configmap(
    simulate: str, kubectl: Kubectl, tmp_path: Path
) -> None:
    url = simulate
    assert _alloc(kubectl, url) == {"gpu-server-1": "2"}

    configmap = tmp_path / "cm.yaml"
    configmap.write_text(CONFIGMAP.format(replicas=4))
    kubectl(url, "create", "-f", str(configmap))
    assert _alloc(kubectl, url) == {"gpu-server-1": "2"}  # a ConfigMap alone changes nothing

    ds = json.loads(kubectl(url, "-n", "kube-system", "get", f"ds/{DS}", "-o", "json").stdout)
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(yaml.safe_dump(_with_time_slicing(ds)))
    kubectl(url, "replace", "-f", str(manifest))
    kubectl(url, "-n", "kube-system", "rollout", "restart", f"ds/{DS}")
    assert _alloc(kubectl, url) == {"gpu-server-1": "8"}

    configmap.write_text(CONFIGMAP.format(replicas=8))
    kubectl(url, "replace", "-f", str(configmap))
    assert _alloc(kubectl, url) == {"gpu-server-1": "8"}  # stale until the plugin restarts
    # kubectl refuses a second rollout restart within the same second; deleting the plugin
    # pod restarts it too (the DaemonSet recreates it with the current ConfigMap).
    restart_pods = ("-n", "kube-system", "delete", "pod", "-l", "name=nvidia-device-plugin-ds")
    kubectl(url, *restart_pods)
    assert _alloc(kubectl, url) == {"gpu-server-1": "16"}

    kubectl(url, "-n", "kube-system", "delete", "configmap", "nvidia-device-plugin-config")
    kubectl(url, *restart_pods)
    pods = json.loads(kubectl(url, "get", "pods", "-A", "-o", "json").stdout)["items"]
    plugin = [p for p in pods if p["metadata"]["name"].startswith(DS)]
    assert len(plugin) == 1 and plugin[0]["status"]["phase"] == "Pending"  # FailedMount
    assert _alloc(kubectl, url) == {"gpu-server-1": "0"}


def test_done_when_kubernetes_client_same_walk_through() -> None:
    sim = SimulatedCluster("host-split")
    url = sim.start()
    try:
        with api_client(url) as api:
            core, apps = client.CoreV1Api(api), client.AppsV1Api(api)

            def alloc() -> str:
                return str(core.read_node("gpu-server-1").status.allocatable["nvidia.com/gpu"])

            assert alloc() == "2"
            body = yaml.safe_load(CONFIGMAP.format(replicas=4))
            core.create_namespaced_config_map("kube-system", body)
            assert alloc() == "2"
            ds = api.sanitize_for_serialization(apps.read_namespaced_daemon_set(DS, "kube-system"))
            apps.replace_namespaced_daemon_set(DS, "kube-system", _with_time_slicing(ds))
            restart = {
                "spec": {
                    "template": {
                        "metadata": {
                            "annotations": {
                                "kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"
                            }
                        }
                    }
                }
            }
            apps.patch_namespaced_daemon_set(DS, "kube-system", restart)
            assert alloc() == "8"
            body["data"]["config.yaml"] = body["data"]["config.yaml"].replace("4", "8")
            core.replace_namespaced_config_map("nvidia-device-plugin-config", "kube-system", body)
            assert alloc() == "8"
            restart["spec"]["template"]["metadata"]["annotations"][
                "kubectl.kubernetes.io/restartedAt"
            ] = "2025-01-01T00:01:00Z"
            apps.patch_namespaced_daemon_set(DS, "kube-system", restart)
            assert alloc() == "16"
    finally:
        sim.stop()


@pytest.fixture(scope="module")
def live() -> Iterator[SimulatedCluster]:
    sim = SimulatedCluster("time-slicing")
    sim.start()
    yield sim
    sim.stop()


def test_kubectl_get_nodes_and_pods_list_everything(
    live: SimulatedCluster, kubectl: Kubectl
) -> None:
    assert live.url is not None
    nodes = kubectl(live.url, "get", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:2] for line in nodes[1:]] == [
        ["gpu-node-a", "Ready"],
        ["gpu-node-b", "Ready"],
        ["gpu-node-c", "Ready"],
    ]
    plugin = kubectl(live.url, "-n", "kube-system", "get", "pods").stdout.splitlines()
    assert plugin[0].split()[:3] == ["NAME", "READY", "STATUS"]
    assert all(line.split()[1:3] == ["1/1", "Running"] for line in plugin[1:])
    pods = json.loads(kubectl(live.url, "get", "pods", "-A", "-o", "json").stdout)
    assert pods["kind"] == "List" or pods["kind"] == "PodList"
    assert {p["metadata"]["name"] for p in pods["items"]} >= {"nb-alice-0", "infer-0"}


def test_kubectl_get_yaml_annotate_label(live: SimulatedCluster, kubectl: Kubectl) -> None:
    assert live.url is not None
    kubectl(live.url, "annotate", "node", "gpu-node-a", "team=research")
    kubectl(live.url, "label", "node", "gpu-node-a", "pool=a100")
    node = yaml.safe_load(kubectl(live.url, "get", "node", "gpu-node-a", "-o", "yaml").stdout)
    assert node["metadata"]["annotations"]["team"] == "research"
    assert node["metadata"]["labels"]["pool"] == "a100"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "32"
    kubectl(live.url, "label", "node", "gpu-node-a", "pool-")
    node = live.get("Node", "gpu-node-a")
    assert node is not None and "pool" not in node["metadata"]["labels"]


def test_kubectl_errors_are_kubernetes_shaped(live: SimulatedCluster, kubectl: Kubectl) -> None:
    assert live.url is not None
    result = kubectl(live.url, "get", "pod", "missing", "-n", "research", check=False)
    assert result.returncode != 0
    assert 'pods "missing" not found' in result.stderr


def test_kubectl_rollout_restart_recreates_plugin_pods(
    live: SimulatedCluster, kubectl: Kubectl
) -> None:
    assert live.url is not None
    before = {p["metadata"]["name"] for p in live.store.objects(POD, "kube-system")}
    kubectl(live.url, "-n", "kube-system", "rollout", "restart", f"ds/{DS}")
    status = kubectl(
        live.url, "-n", "kube-system", "rollout", "status", f"ds/{DS}", "--timeout=10s"
    ).stdout
    assert "successfully rolled out" in status
    after = wait_for(
        lambda: {
            p["metadata"]["name"]
            for p in json.loads(
                kubectl(live.url, "-n", "kube-system", "get", "pods", "-o", "json").stdout
            )["items"]
        }
    )
    assert len(after) == 3 and not (after & before)
