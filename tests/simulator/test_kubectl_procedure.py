"""The seed manual's procedure, typed as an admin would, with the real kubectl v1.35.

No `--validate=false` anywhere: kubectl reads the simulator's OpenAPI v3 document and asks
it to validate strictly. The rollout is paced (Terminating, then ContainerCreating), so
`kubectl rollout status` really waits.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.simulator import resources
from app.simulator.cluster import SimulatedCluster
from app.simulator.rollout import RolloutPace
from tests.chart.helm import helm
from tests.kube_tools import kube_tools
from tests.live import wait_for

DS = "nvidia-device-plugin-daemonset"
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: nvidia-device-plugin-config
  namespace: kube-system
data:
  config.yaml: |
    version: v1
    sharing:
      timeSlicing:
        resources:
          - name: nvidia.com/gpu
            replicas: {replicas}
"""


class Kubectl:
    """`kubectl --server=URL ...` with the real binary; raises on failure unless told not to."""

    def __init__(self, url: str, home: Path) -> None:
        self.url = url
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}

    def __call__(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(kube_tools().kubectl), f"--server={self.url}", *args],
            capture_output=True,
            text=True,
            timeout=90,
            env={**self.env, **(env or {})},
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
        return done

    def alloc(self) -> str:
        jsonpath = r"jsonpath={.status.allocatable.nvidia\.com/gpu}"
        return self("get", "node", "gpu-server-1", "-o", jsonpath).stdout


@pytest.fixture
def paced(tmp_path: Path) -> Iterator[tuple[SimulatedCluster, Kubectl]]:
    sim = SimulatedCluster(
        "host-split", rollout_pace=RolloutPace(terminating_s=0.4, creating_s=0.4)
    )
    url = sim.start()
    yield sim, Kubectl(url, tmp_path)
    sim.stop()


def _time_sliced(ds: dict[str, Any]) -> dict[str, Any]:
    """The DaemonSet as the admin edits it: CONFIG_FILE plus the ConfigMap mounted."""
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": DS, "namespace": "kube-system"},
        "spec": ds["spec"],
    }
    spec = manifest["spec"]["template"]["spec"]
    container = spec["containers"][0]
    container["env"].append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
    container["volumeMounts"].append({"name": "plugin-config", "mountPath": "/config"})
    spec["volumes"].append(
        {"name": "plugin-config", "configMap": {"name": "nvidia-device-plugin-config"}}
    )
    return manifest


def test_seed_manual_procedure_with_kubectl_1_35(
    paced: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    sim, kubectl = paced
    table = kubectl("-n", "kube-system", "get", "ds").stdout.splitlines()
    assert table[0].split()[:6] == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
    ]
    assert table[1].split()[:6] == [DS, "1", "1", "1", "1", "1"]
    assert kubectl.alloc() == "2"

    configmap = tmp_path / "cm.yaml"
    configmap.write_text(CONFIGMAP.format(replicas=4))
    applied = kubectl("apply", "-f", str(configmap)).stdout
    assert applied.strip() == "configmap/nvidia-device-plugin-config created"
    assert kubectl.alloc() == "2"  # the ConfigMap alone changes nothing

    ds = json.loads(kubectl("-n", "kube-system", "get", f"ds/{DS}", "-o", "json").stdout)
    daemonset = tmp_path / "ds.yaml"
    daemonset.write_text(yaml.safe_dump(_time_sliced(ds)))
    kubectl("apply", "-f", str(daemonset))
    status = kubectl("-n", "kube-system", "rollout", "status", f"ds/{DS}", "--timeout=60s").stdout
    assert status.splitlines()[-1] == f'daemon set "{DS}" successfully rolled out'
    assert kubectl.alloc() == "8"

    configmap.write_text(CONFIGMAP.format(replicas=8))
    kubectl("apply", "-f", str(configmap))
    assert kubectl.alloc() == "8"  # stale until the plugin restarts
    kubectl("-n", "kube-system", "rollout", "restart", f"ds/{DS}")
    status = kubectl("-n", "kube-system", "rollout", "status", f"ds/{DS}", "--timeout=60s").stdout
    assert "Waiting for daemon set" in status  # it really waited through the paced rollout
    assert status.splitlines()[-1] == f'daemon set "{DS}" successfully rolled out'
    assert kubectl.alloc() == "16"

    described = kubectl("describe", "node", "gpu-server-1").stdout
    capacity = described.split("Capacity:")[1].split("Allocatable:")[0]
    assert "nvidia.com/gpu:     16" in capacity  # 8 replicas x 2 GPUs visible to the plugin

    source = tmp_path / "config.yaml"
    source.write_text("version: v1\n")
    created = kubectl(
        "-n", "kube-system", "create", "configmap", "from-file", f"--from-file={source}"
    )
    assert created.stdout.strip() == "configmap/from-file created"
    stored = sim.get("ConfigMap", "from-file", "kube-system")
    assert stored is not None and stored["data"] == {"config.yaml": "version: v1\n"}

    events = kubectl("-n", "kube-system", "get", "events").stdout.splitlines()
    assert events[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any(f"daemonset/{DS}" in line and "SuccessfulCreate" in line for line in events[1:])

    configmap.write_text(CONFIGMAP.format(replicas=2))
    diff = kubectl("diff", "-f", str(configmap), check=False)
    assert diff.returncode == 1, diff.stderr  # 1: differences found
    assert "-            replicas: 8" in diff.stdout
    assert "+            replicas: 2" in diff.stdout

    dry = kubectl("apply", "--dry-run=server", "-f", str(configmap)).stdout
    assert dry.strip() == "configmap/nvidia-device-plugin-config configured (server dry run)"
    assert (
        "replicas: 8"
        in (sim.get("ConfigMap", "nvidia-device-plugin-config", "kube-system") or {})["data"][
            "config.yaml"
        ]
    )


def test_paced_rollout_shows_terminating_then_container_creating(
    paced: tuple[SimulatedCluster, Kubectl],
) -> None:
    _sim, kubectl = paced
    kubectl("-n", "kube-system", "rollout", "restart", f"ds/{DS}")

    def statuses() -> set[str]:
        rows = kubectl("-n", "kube-system", "get", "pods", "--no-headers").stdout.splitlines()
        return {row.split()[2] for row in rows}

    assert wait_for(lambda: "Terminating" in statuses(), timeout_s=10, interval_s=0.05)
    assert wait_for(lambda: "ContainerCreating" in statuses(), timeout_s=10, interval_s=0.05)
    assert wait_for(lambda: statuses() == {"Running"}, timeout_s=10, interval_s=0.05)


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
    manifest.write_text(yaml.safe_dump(_time_sliced(ds)))
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
        reader = threading.Thread(
            target=lambda: [lines.put(line) for line in watching.stdout or []], daemon=True
        )
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


def test_rendered_chart_applies_with_server_dry_run(
    quick: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    sim, kubectl = quick
    rendered = tmp_path / "chart.yaml"
    chart = Path(__file__).resolve().parents[2] / "chart"
    rendered.write_text(helm("template", "gpu-slots", str(chart), "--namespace", "gpu-slots"))
    kubectl("create", "namespace", "gpu-slots")
    out = kubectl("apply", "--dry-run=server", "-f", str(rendered)).stdout.splitlines()

    assert len(out) == 12
    assert all(line.endswith(" created (server dry run)") for line in out)
    assert {line.split("/")[0] for line in out} == {
        "serviceaccount",
        "secret",
        "configmap",
        "clusterrole.rbac.authorization.k8s.io",
        "clusterrolebinding.rbac.authorization.k8s.io",
        "role.rbac.authorization.k8s.io",
        "rolebinding.rbac.authorization.k8s.io",
        "service",
        "daemonset.apps",
        "deployment.apps",
    }
    assert [sim.store.objects(r) for r in resources.GENERIC] == [
        [] for _ in resources.GENERIC
    ]  # nothing stored


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
        "apis/apps/v1",
        "apis/networking.k8s.io/v1",
        "apis/rbac.authorization.k8s.io/v1",
    ]
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
        "metadata": {"name": "bad-time", "namespace": "kube-system"},
        "involvedObject": {"kind": "Node", "name": "gpu-server-1"},
        "lastTimestamp": "yesterday",
    }
    response = httpx.post(f"{sim.url}/api/v1/namespaces/kube-system/events", json=event)

    assert response.status_code == 422
    assert "'yesterday' is not an RFC 3339 time" in response.json()["message"]
    assert sim.get("Event", "bad-time", "kube-system") is None
