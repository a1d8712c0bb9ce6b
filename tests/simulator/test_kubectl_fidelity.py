"""kubectl v1.35 features a real API server gives and the simulator must too.

Logs, mount retries, watch tables, cordon, defaulting, event times, edit, strict field
validation, protobuf bodies and the OpenAPI documents, each through the real binary.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from app.simulator.apiserver import resources
from app.simulator.world.cluster import SimulatedCluster
from tests.kube_tools import kube_tools
from tests.simulator.kubectl_cli import CONFIGMAP, DS, Kubectl, time_sliced


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[tuple[SimulatedCluster, Kubectl]]:
    sim = SimulatedCluster("host-split")
    url = sim.start()
    yield sim, Kubectl(url, tmp_path)
    sim.stop()


def test_kubectl_logs_of_a_plugin_pod_show_its_start(
    quick: tuple[SimulatedCluster, Kubectl],
) -> None:
    _, kubectl = quick
    lines = kubectl("-n", "kube-system", "logs", f"ds/{DS}").stdout.splitlines()

    assert lines[0].endswith('"Starting NVIDIA Device Plugin" version="v0.18.2"')
    assert lines[-2].endswith("Found 2 devices for 'nvidia.com/gpu' (2 slots)")
    assert lines[-1].endswith("Registered device plugin for 'nvidia.com/gpu' with Kubelet")


def test_missing_configmap_mount_is_retried_when_it_comes_back(
    quick: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    _sim, kubectl = quick
    configmap = tmp_path / "cm.yaml"
    configmap.write_text(CONFIGMAP.format(replicas=4))
    kubectl("apply", "-f", str(configmap))
    ds = json.loads(kubectl("-n", "kube-system", "get", f"ds/{DS}", "-o", "json").stdout)
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(yaml.safe_dump(time_sliced(ds)))
    kubectl("apply", "-f", str(manifest))
    assert kubectl.alloc() == "8"

    kubectl("-n", "kube-system", "delete", "configmap", "nvidia-device-plugin-config")
    kubectl("-n", "kube-system", "delete", "pod", "-l", "name=nvidia-device-plugin-ds")
    row = kubectl("-n", "kube-system", "get", "pods", "--no-headers").stdout.split()
    assert row[1:3] == ["0/1", "ContainerCreating"]
    pod = row[0]

    waiting = kubectl("-n", "kube-system", "logs", pod, check=False)
    assert waiting.returncode == 1
    assert waiting.stderr.strip().endswith(
        f'container "nvidia-device-plugin-ctr" in pod "{pod}" is waiting to start: '
        "ContainerCreating"
    )

    kubectl("apply", "-f", str(configmap))
    row = kubectl("-n", "kube-system", "get", "pods", "--no-headers").stdout.split()
    assert row[:3] == [pod, "1/1", "Running"]  # the same pod: the kubelet retried the mount
    assert kubectl.alloc() == "8"


def test_watch_prints_table_rows_with_one_header(quick: tuple[SimulatedCluster, Kubectl]) -> None:
    sim, kubectl = quick
    assert sim.url is not None
    kubectl("create", "configmap", "first", "--from-literal=a=1")
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        [str(kube_tools().kubectl), f"--server={sim.url}", "get", "configmaps", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as watching:
        assert watching.stdout is not None
        printed = watching.stdout

        def read() -> None:
            for line in printed:
                lines.put(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert lines.get(timeout=20).split() == ["NAME", "DATA", "AGE"]
            assert lines.get(timeout=20).split()[:2] == ["first", "1"]
            kubectl("create", "configmap", "watched", "--from-literal=a=1", "--from-literal=b=2")
            assert lines.get(timeout=20).split()[:2] == ["watched", "2"]  # no second header
        finally:
            watching.terminate()


def test_cordoned_node_shows_scheduling_disabled(quick: tuple[SimulatedCluster, Kubectl]) -> None:
    _, kubectl = quick
    kubectl("cordon", "gpu-server-1")

    row = kubectl("get", "node", "gpu-server-1", "--no-headers").stdout.split()
    assert row[:2] == ["gpu-server-1", "Ready,SchedulingDisabled"]


def test_pod_with_gpu_limits_only_gets_requests(
    quick: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    _sim, kubectl = quick
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "limits-only", "namespace": "ml"},
        "spec": {
            "nodeName": "gpu-server-1",
            "containers": [
                {"name": "c", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
    }
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod))
    kubectl("apply", "-f", str(manifest))
    stored = json.loads(kubectl("-n", "ml", "get", "pod", "limits-only", "-o", "json").stdout)

    assert stored["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    allocated = kubectl("describe", "node", "gpu-server-1").stdout.split("Allocated resources:")[1]
    gpu_row = next(line.split() for line in allocated.splitlines() if "nvidia.com/gpu" in line)
    assert gpu_row[1] == gpu_row[2]  # Requests == Limits, as the scheduler counts them


def test_events_with_offset_and_micro_times_still_print(
    quick: tuple[SimulatedCluster, Kubectl],
) -> None:
    sim, kubectl = quick
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "audit.1", "namespace": "kube-system"},
        "involvedObject": {"kind": "DaemonSet", "name": DS, "namespace": "kube-system"},
        "reason": "PluginModeChanged",
        "message": "time-slicing x4 by admin",
        "type": "Normal",
        "firstTimestamp": "2026-01-01T09:00:00+09:00",
        "lastTimestamp": "2026-01-01T00:00:00.123456+00:00",
        "eventTime": "2026-01-01T00:00:00.5+00:00",
    }
    created = httpx.post(f"{sim.url}/api/v1/namespaces/kube-system/events", json=event).json()
    printed = kubectl(
        "-n", "kube-system", "get", "events", "--field-selector=reason=PluginModeChanged"
    )

    assert created["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert created["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert created["eventTime"] == "2026-01-01T00:00:00.500000Z"
    assert "daemonset/nvidia-device-plugin-daemonset   time-slicing x4 by admin" in printed.stdout


def test_kubectl_edit_validates_without_flags(
    quick: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    sim, kubectl = quick
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/team: research/team: vision/' \"$1\"\n")
    editor.chmod(0o755)
    kubectl("annotate", "node", "gpu-server-1", "team=research")
    kubectl("edit", "node", "gpu-server-1", env={"KUBE_EDITOR": str(editor)})
    node = sim.get("Node", "gpu-server-1")

    assert node is not None and node["metadata"]["annotations"]["team"] == "vision"


def test_unknown_field_is_refused_strictly(
    quick: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    _, kubectl = quick
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndatta: {a: b}\n")
    done = kubectl("apply", "-f", str(manifest), check=False)

    assert done.returncode == 1
    assert 'strict decoding error: unknown field "datta"' in done.stderr


def test_kubectl_create_subcommands_send_protobuf_and_are_stored(
    quick: tuple[SimulatedCluster, Kubectl],
) -> None:
    sim, kubectl = quick
    kubectl("create", "namespace", "team-a")
    kubectl("-n", "team-a", "create", "secret", "generic", "creds", "--from-literal=token=s3cr3t")
    kubectl("-n", "team-a", "create", "serviceaccount", "runner")
    kubectl("-n", "team-a", "create", "configmap", "labels", "--from-literal=x=1")
    secret = sim.get("Secret", "creds", "team-a")
    configmap = sim.get("ConfigMap", "labels", "team-a")

    assert sim.get("Namespace", "team-a") is not None
    assert secret is not None and secret["data"] == {"token": "czNjcjN0"}
    assert secret["type"] == "Opaque"
    secrets = kubectl("-n", "team-a", "get", "secrets").stdout.splitlines()
    assert [line.split() for line in secrets] == [
        ["NAME", "TYPE", "DATA", "AGE"],
        ["creds", "Opaque", "1", secrets[1].split()[3]],
    ]
    assert sim.get("ServiceAccount", "runner", "team-a") is not None
    assert configmap is not None and configmap["data"] == {"x": "1"}


def test_protobuf_body_the_simulator_cannot_read_is_a_415(
    quick: tuple[SimulatedCluster, Kubectl],
) -> None:
    sim, _ = quick
    response = httpx.post(
        f"{sim.url}/api/v1/namespaces/default/configmaps",
        content=b"k8s\x00\x0a\xff",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )

    assert response.status_code == 415
    assert response.json()["message"] == "the protobuf body could not be read: truncated varint"
    assert sim.store.objects(resources.CONFIGMAP, "default") == []


def test_openapi_documents_describe_every_served_kind(
    quick: tuple[SimulatedCluster, Kubectl],
) -> None:
    sim, _ = quick
    root = httpx.get(f"{sim.url}/openapi/v3").json()
    rbac_url = root["paths"]["apis/rbac.authorization.k8s.io/v1"]["serverRelativeURL"]
    rbac = httpx.get(f"{sim.url}{rbac_url}").json()
    v2 = httpx.get(f"{sim.url}/openapi/v2", headers={"Accept": "application/json"}).json()
    v2_protobuf = httpx.get(
        f"{sim.url}/openapi/v2",
        headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
    )

    assert sorted(root["paths"]) == [
        "api/v1",
        "apis/admissionregistration.k8s.io/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/networking.k8s.io/v1",
        "apis/node.k8s.io/v1",
        "apis/rbac.authorization.k8s.io/v1",
        "apis/resource.k8s.io/v1",
    ]
    dra_url = root["paths"]["apis/resource.k8s.io/v1"]["serverRelativeURL"]
    dra = httpx.get(f"{sim.url}{dra_url}").json()
    claim = dra["paths"]["/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"]
    assert claim["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "resource.k8s.io",
        "version": "v1",
        "kind": "ResourceClaim",
    }
    assert "/apis/resource.k8s.io/v1/resourceslices" in dra["paths"]
    assert "io.k8s.api.resource.v1.DeviceClass" in v2["definitions"]
    patch = rbac["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "rbac.authorization.k8s.io",
        "version": "v1",
        "kind": "ClusterRole",
    }
    assert {"name": "fieldValidation", "in": "query"}.items() <= patch["parameters"][1].items()
    assert "io.k8s.api.apps.v1.DaemonSet" in v2["definitions"]
    assert v2_protobuf.status_code == 406


def test_event_with_a_time_that_is_not_rfc3339_is_refused(
    quick: tuple[SimulatedCluster, Kubectl],
) -> None:
    sim, _ = quick
    event = {
        "metadata": {"name": "bad-time", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "gpu-server-1"},
        "lastTimestamp": "yesterday",
    }
    response = httpx.post(f"{sim.url}/api/v1/namespaces/default/events", json=event)

    assert response.status_code == 422
    assert "'yesterday' is not an RFC 3339 time" in response.json()["message"]
    assert sim.get("Event", "bad-time", "default") is None
