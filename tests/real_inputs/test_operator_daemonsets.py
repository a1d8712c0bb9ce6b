"""The GPU Operator v26.7.0 device-plugin DaemonSet, applied with kubectl to the simulator.

Inputs: ../shared/fixtures/real/gpu-operator/. `derived/` holds the DaemonSet with the
ClusterPolicy transforms applied; the operator's other assets (RBAC, the entrypoint
ConfigMap) are templates whose namespace reads "FILLED BY THE OPERATOR", filled here with
`gpu-operator` as the operator does. The time-slicing ConfigMaps are NVIDIA's docs' own.
The operator labels the pod template (not the DaemonSet) as its own: the snapshot must
still say `gpu-operator`, read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.real_inputs.harness import REAL, Applied, SimNode, allocatable, applied_to, real

NAMESPACE = "gpu-operator"
PLACEHOLDER = '"FILLED BY THE OPERATOR"'
PER_NODE = "nvidia.com/device-plugin.config"


@dataclass(frozen=True)
class Variant:
    daemonset: str
    configmap: str | None
    labels: dict[str, str]
    mode: str
    replicas: int
    source: str | None
    allocatable: dict[str, str]


VARIANTS = [
    Variant("no-config", None, {}, "basic", 1, None, {"nvidia.com/gpu": "2"}),
    Variant(
        "time-slicing-config-all",
        "time-slicing-config-all",
        {},  # DEFAULT_CONFIG=any
        "time-slicing",
        4,
        "configmap/time-slicing-config-all#any",
        {"nvidia.com/gpu": "8"},
    ),
    Variant(
        "time-slicing-config-fine",
        "time-slicing-config-fine",
        {PER_NODE: "tesla-t4"},
        "time-slicing",
        4,
        "configmap/time-slicing-config-fine#tesla-t4",
        {"nvidia.com/gpu": "8"},
    ),
    Variant(
        "time-slicing-config-fine",
        "time-slicing-config-fine",
        {},  # no DEFAULT_CONFIG, FALLBACK_STRATEGIES=empty: the plugin's defaults
        "basic",
        1,
        None,
        {"nvidia.com/gpu": "2"},
    ),
]


def install_operator_assets(cluster: Applied, tmp_path: Path) -> None:
    """The state-device-plugin assets but the DaemonSet, namespace filled like the operator."""
    cluster.kubectl("create", "namespace", NAMESPACE)
    for asset in sorted(real("gpu-operator/assets/state-device-plugin").glob("0[1-4]*.yaml")):
        filled = tmp_path / asset.name
        filled.write_text(asset.read_text().replace(PLACEHOLDER, NAMESPACE))
        cluster.apply(filled)


def test_operator_daemonsets_every_derived_file_has_a_case() -> None:
    folder = REAL / "gpu-operator/derived"
    if not folder.exists():
        pytest.skip(f"real artifact {folder} absent")
    names = {p.name for p in folder.glob("device-plugin-ds.*.yaml")}
    assert names == {f"device-plugin-ds.{v.daemonset}.yaml" for v in VARIANTS}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v.daemonset}:{v.labels}")
def test_operator_daemonset_applied_with_kubectl_is_read_only_with_its_config(
    variant: Variant, tmp_path: Path
) -> None:
    with applied_to(tmp_path, [SimNode("gpu-1", labels=variant.labels)]) as cluster:
        install_operator_assets(cluster, tmp_path)
        if variant.configmap:
            docs = real(f"gpu-operator/docs-manifests/{variant.configmap}.yaml")
            cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(docs))
        cluster.apply(real(f"gpu-operator/derived/device-plugin-ds.{variant.daemonset}.yaml"))
        snapshot = cluster.snapshot()
        node = cluster.node("gpu-1")
        assert allocatable(cluster, "gpu-1") == variant.allocatable
        assert (node.mode.value, node.replicas) == (variant.mode, variant.replicas)
        assert node.config is not None
        assert node.config.daemonset == f"{NAMESPACE}/nvidia-device-plugin-daemonset"
        assert node.config.managed_by == "gpu-operator"
        assert node.config.source == variant.source
        assert node.config.mig_strategy == "single"  # the ClusterPolicy's MIG_STRATEGY
        assert node.config.change_with is not None
        assert node.config.change_with.startswith("kubectl edit clusterpolicy")
        assert snapshot.plugin.operator_managed is True
        assert [f.code for f in snapshot.findings] == ["plugin-operator-managed"]


def test_operator_daemonset_without_its_entrypoint_configmap_never_starts(
    tmp_path: Path,
) -> None:
    """Applied alone (no operator to create the entrypoint), the pod waits for its mount."""
    with applied_to(tmp_path, [SimNode("gpu-1")]) as cluster:
        cluster.kubectl("create", "namespace", NAMESPACE)
        cluster.apply(real("gpu-operator/derived/device-plugin-ds.no-config.yaml"))
        node = cluster.node("gpu-1")
        assert allocatable(cluster, "gpu-1") == {}
        assert node.plugin_pod is not None and node.plugin_pod.state == "ContainerCreating"
        assert "plugin-pod-not-ready" in {f.code for f in node.findings}
