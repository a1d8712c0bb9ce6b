"""NVIDIA's static manifests (deployments/static of k8s-device-plugin v0.20.0) applied with kubectl.

Inputs: ../shared/fixtures/real/nvidia-device-plugin-chart/static/. Not managed by Helm or
the GPU Operator (`managed_by: other`): the admin page may write them. The GFD DaemonSets
run no plugin, so a node with only GFD advertises nothing and the snapshot says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_inputs.harness import REAL, SimNode, allocatable, applied_to, real

STATIC = "nvidia-device-plugin-chart/static"
PLUGINS = {
    "nvidia-device-plugin.yml": "kube-system/nvidia-device-plugin-daemonset",
    "nvidia-device-plugin-compat-with-cpumanager.yml": "kube-system/nvidia-device-plugin-daemonset",
    "nvidia-device-plugin-privileged-with-service-account.yml": (
        "nvidia-device-plugin/nvidia-device-plugin-daemonset"
    ),
}
GFD_ONLY = (
    "gpu-feature-discovery-daemonset.yaml",
    "gpu-feature-discovery-daemonset-with-mig-single.yaml",
    "gpu-feature-discovery-daemonset-with-mig-mixed.yaml",
)


def test_static_manifests_every_file_has_a_case() -> None:
    folder = REAL / STATIC
    if not folder.exists():
        pytest.skip(f"real artifact {folder} absent")
    files = {p.name for p in folder.iterdir() if p.suffix in (".yml", ".yaml")}
    assert files == set(PLUGINS) | set(GFD_ONLY)


@pytest.mark.parametrize("file", sorted(PLUGINS))
def test_static_manifest_applied_with_kubectl_is_a_basic_unmanaged_install(
    file: str, tmp_path: Path
) -> None:
    with applied_to(tmp_path, [SimNode("gpu-1", gpus=4)]) as cluster:
        cluster.apply(real(f"{STATIC}/{file}"))
        node = cluster.node("gpu-1")
        assert allocatable(cluster, "gpu-1") == {"nvidia.com/gpu": "4"}
        assert (node.mode.value, node.replicas, node.resource) == ("basic", 1, "nvidia.com/gpu")
        assert node.config is not None
        assert (node.config.daemonset, node.config.managed_by) == (PLUGINS[file], "other")
        assert (node.config.source, node.config.change_with) == (None, None)
        assert node.allocation == "device-plugin"
        assert [f.code for f in node.findings] == []


@pytest.mark.parametrize("file", GFD_ONLY)
def test_static_manifest_gfd_only_runs_no_plugin_and_says_so(file: str, tmp_path: Path) -> None:
    with applied_to(tmp_path, [SimNode("gpu-1")]) as cluster:
        cluster.apply(real(f"{STATIC}/{file}"))
        snapshot = cluster.snapshot()
        node = cluster.node("gpu-1")
        assert allocatable(cluster, "gpu-1") == {}
        assert (node.config, node.plugin_pod, node.allocation) == (None, None, "none")
        assert "plugin-daemonset-missing" in {f.code for f in snapshot.findings}
