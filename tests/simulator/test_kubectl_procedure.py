"""The seed manual's procedure, typed as an admin would, with the real kubectl v1.35.

No `--validate=false` anywhere: kubectl reads the simulator's OpenAPI v3 document and asks
it to validate strictly. The rollout is paced (Terminating, then ContainerCreating), so
`kubectl rollout status` really waits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from app.simulator.apiserver import resources
from app.simulator.plugin.rollout import RolloutPace
from app.simulator.world.cluster import SimulatedCluster
from tests.chart.helm import helm
from tests.live import wait_for
from tests.simulator.kubectl_cli import CONFIGMAP, DS, Kubectl, time_sliced


@pytest.fixture
def paced(tmp_path: Path) -> Iterator[tuple[SimulatedCluster, Kubectl]]:
    sim = SimulatedCluster(
        "host-split", rollout_pace=RolloutPace(terminating_s=0.4, creating_s=0.4)
    )
    url = sim.start()
    yield sim, Kubectl(url, tmp_path)
    sim.stop()


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
    daemonset.write_text(yaml.safe_dump(time_sliced(ds)))
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


def test_rendered_chart_applies_with_server_dry_run(
    quick: tuple[SimulatedCluster, Kubectl], tmp_path: Path
) -> None:
    sim, kubectl = quick
    rendered = tmp_path / "chart.yaml"
    chart = Path(__file__).resolve().parents[2] / "chart"
    rendered.write_text(helm("template", "gpu-slots", str(chart), "--namespace", "gpu-slots"))
    kubectl("create", "namespace", "gpu-slots")
    out = kubectl("apply", "--dry-run=server", "-f", str(rendered)).stdout.splitlines()

    assert len(out) == 14  # 12, and the change history's Role and RoleBinding
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
