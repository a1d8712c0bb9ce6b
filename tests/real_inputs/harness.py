"""Real public manifests applied with the real kubectl to the simulator, read as the dashboard.

The artifacts live in ../shared/fixtures/real (see its README); they are read from there at
test time, never copied into the project. Tests skip with the reason when the folder or the
kubectl binary is missing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.domain.cluster import AccountingOptions, ClusterState, Manifest
from app.domain.engine.build import build_snapshot
from app.domain.report import ReceivedReport
from app.domain.snapshot import NodeState, Snapshot
from app.simulator.apiserver.resources import (
    CONFIGMAP,
    DAEMONSET,
    DEVICECLASS,
    NODE,
    POD,
    RESOURCECLAIM,
    RESOURCESLICE,
)
from app.simulator.world.cluster import SimulatedCluster
from app.web.services.snapshots.builder import configmaps_by_key, configured_daemonset
from tests.kube_tools import ToolsUnavailable, kube_tools
from tests.real_fixtures import REAL_FIXTURES

REAL = REAL_FIXTURES
NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
GPU_NODE_LABELS = {
    "nvidia.com/gpu.present": "true",  # the chart's node affinity
    "nvidia.com/gpu.deploy.device-plugin": "true",  # the GPU Operator's nodeSelector
}


def real(relative: str) -> Path:
    """A file of the shared real-artifact folder, or skip the test saying what is missing."""
    path = REAL / relative
    if not path.exists():
        pytest.skip(f"real artifact {path} absent (the shared fixtures folder is not here)")
    return path


def kubectl_binary() -> Path:
    try:
        return kube_tools().kubectl
    except ToolsUnavailable as exc:
        pytest.skip(f"kubectl unavailable: {exc}")


@dataclass(frozen=True)
class SimNode:
    """A simulated GPU node of the scenario the manifests are applied to."""

    name: str
    gpus: int = 2
    labels: Mapping[str, str] | None = None
    mig: Sequence[str] = ()
    dra: bool = False

    def scenario_entry(self) -> dict[str, Any]:
        labels = {**GPU_NODE_LABELS, **(self.labels or {})}
        entry: dict[str, Any] = {"name": self.name, "labels": labels}
        if self.dra:
            entry["dra"] = True
            entry["labels"] = dict(self.labels or {})
        if self.mig:
            entry["gpus"] = [
                {"index": i, "mig": list(self.mig) if i == 0 else [], "memory_total_mib": 81920}
                for i in range(self.gpus)
            ]
            entry["gpus"][0]["name"] = "NVIDIA H100 80GB HBM3"
        else:
            entry["gpu_count"] = self.gpus
        return entry


class Applied:
    """A running simulator that real manifests were applied to with `kubectl apply -f`."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self.sim = sim
        assert sim.url is not None
        self.url = sim.url

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(kubectl_binary()), f"--server={self.url}", *args],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
        return done

    def apply(self, path: Path, *, namespace: str | None = None) -> str:
        if namespace is not None:
            self.kubectl("create", "namespace", namespace, check=False)
        return self.kubectl("apply", "-f", str(path)).stdout

    def state(self) -> ClusterState:
        """What the dashboard's cache would hold, plus every simulated agent's report."""
        store = self.sim.store
        daemonsets = store.objects(DAEMONSET)
        nodes = store.objects(NODE)
        reports = {}
        for node in nodes:
            name = node["metadata"]["name"]
            report = self.sim.report(name)
            if report is not None:
                reports[name] = ReceivedReport(report=report, received_at=NOW)
        return ClusterState(
            daemonset=configured_daemonset(daemonsets, AccountingOptions()),
            configmaps=configmaps_by_key(store.objects(CONFIGMAP), "kube-system"),
            nodes=nodes,
            pods=store.objects(POD),
            reports=reports,
            device_classes=store.objects(DEVICECLASS),
            resource_slices=store.objects(RESOURCESLICE),
            resource_claims=store.objects(RESOURCECLAIM),
            daemonsets=daemonsets,
        )

    def snapshot(self) -> Snapshot:
        return build_snapshot(self.state(), options=AccountingOptions(), now=NOW)

    def node(self, name: str) -> NodeState:
        return next(n for n in self.snapshot().nodes if n.name == name)

    def node_json(self, name: str) -> dict[str, Any]:
        """The node as `GET /api/v1/nodes/<name>` would serialise it."""
        dumped: dict[str, Any] = self.node(name).model_dump(mode="json")
        return dumped


@contextmanager
def applied_to(tmp_path: Path, nodes: Sequence[SimNode]) -> Iterator[Applied]:
    """A fresh simulator with these GPU nodes and no plugin at all (the manifests bring it)."""
    scenario = {
        "description": "GPU nodes, no device plugin: the real manifests install it",
        "nodes": [node.scenario_entry() for node in nodes],
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    sim = SimulatedCluster(path)
    sim.start()
    try:
        yield Applied(sim)
    finally:
        sim.stop()


def documents(path: Path) -> list[Manifest]:
    """Every object of a multi-document manifest file."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]


def allocatable(applied: Applied, node: str) -> dict[str, str]:
    """The node's `nvidia.com/*` allocatable as the simulated plugin advertised it."""
    found = applied.sim.get("Node", node) or {}
    values = (found.get("status") or {}).get("allocatable") or {}
    return {k: str(v) for k, v in values.items() if k.startswith("nvidia.com/")}
