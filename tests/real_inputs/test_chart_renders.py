"""Every render of NVIDIA's device-plugin chart v0.20.0, applied with kubectl to the simulator.

Inputs: ../shared/fixtures/real/nvidia-device-plugin-chart/rendered/*.yaml (`helm template`
of the real chart, values in rendered/values/). Each is applied as `kubectl apply -f` after
`kubectl create namespace nvidia-device-plugin` (what `helm install --create-namespace` does)
to a simulator with two-GPU nodes; the snapshot must name the Helm install, its config
source, mode and replicas per node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.real_inputs.harness import (
    REAL,
    SimNode,
    allocatable,
    applied_to,
    documents,
    real,
)

CHART = "nvidia-device-plugin-chart/rendered"
NAMESPACE = "nvidia-device-plugin"
DAEMONSET = f"{NAMESPACE}/nvdp-nvidia-device-plugin"
CONFIGS = "nvdp-nvidia-device-plugin-configs"
PER_NODE = "nvidia.com/device-plugin.config"


@dataclass(frozen=True)
class Render:
    file: str
    labels: dict[str, str]
    mode: str
    replicas: int
    source: str | None
    allocatable: dict[str, str]
    mig_strategy: str = "none"


RENDERS = [
    Render("default.yaml", {}, "basic", 1, None, {"nvidia.com/gpu": "2"}),
    Render("mig-mixed-flag.yaml", {}, "basic", 1, None, {"nvidia.com/gpu": "2"}, "mixed"),
    Render(
        "mps.yaml",
        {"nvidia.com/mps.capable": "true"},  # GFD's label; the MPS daemon's nodeSelector
        "mps",
        4,
        f"configmap/{CONFIGS}#default",
        {"nvidia.com/gpu": "8"},
    ),
    Render(
        "packed-policy.yaml",
        {},
        "time-slicing",
        4,
        f"configmap/{CONFIGS}#default",
        {"nvidia.com/gpu": "8"},
    ),
    Render(
        "timeslicing-per-node-with-gfd.yaml",
        {PER_NODE: "ts-4"},
        "time-slicing",
        4,
        f"configmap/{CONFIGS}#ts-4",
        {"nvidia.com/gpu": "8"},
    ),
    Render(
        "timeslicing-per-node-with-gfd.yaml",
        {PER_NODE: "ts-10-renamed"},
        "time-slicing",
        10,
        f"configmap/{CONFIGS}#ts-10-renamed",
        {"nvidia.com/gpu.shared": "20"},
    ),
    Render(
        "timeslicing-per-node-with-gfd.yaml",
        {},  # no label: config.default (`default`, migStrategy none)
        "basic",
        1,
        f"configmap/{CONFIGS}#default",
        {"nvidia.com/gpu": "2"},
    ),
]


def test_chart_renders_every_file_has_a_case() -> None:
    folder = REAL / CHART
    if not folder.exists():
        pytest.skip(f"real artifact {folder} absent")
    files = {p.name for p in folder.glob("*.yaml")}
    assert files == {r.file for r in RENDERS} | {"external-configmap.yaml"}


@pytest.mark.parametrize("render", RENDERS, ids=lambda r: f"{r.file}:{r.labels}")
def test_chart_render_applied_with_kubectl_gives_install_config_mode_and_replicas(
    render: Render, tmp_path: Path
) -> None:
    with applied_to(tmp_path, [SimNode("gpu-1", labels=render.labels)]) as cluster:
        cluster.apply(real(f"{CHART}/{render.file}"), namespace=NAMESPACE)
        node = cluster.node("gpu-1")
        assert allocatable(cluster, "gpu-1") == render.allocatable
        assert (node.mode.value, node.replicas) == (render.mode, render.replicas)
        assert node.config is not None
        assert node.config.daemonset == DAEMONSET
        assert node.config.managed_by == "helm"
        assert node.config.source == render.source
        assert node.config.mig_strategy == render.mig_strategy
        assert node.config.change_with is not None and "helm upgrade" in node.config.change_with
        assert node.plugin_pod is not None and node.plugin_pod.ready
        assert [f.code for f in node.findings] == []


def test_chart_render_external_configmap_missing_then_created_is_time_sliced(
    tmp_path: Path,
) -> None:
    """`config.name=time-slicing-config`: the chart expects the user to create that ConfigMap."""
    with applied_to(tmp_path, [SimNode("gpu-1")]) as cluster:
        cluster.apply(real(f"{CHART}/external-configmap.yaml"), namespace=NAMESPACE)
        before = cluster.node("gpu-1")
        assert before.config is not None and before.config.managed_by == "helm"
        assert "config-key-missing" in {f.code for f in before.findings}
        # NVIDIA's docs' ConfigMap (key `any`, replicas 4) under the name the values chose.
        docs = documents(real("gpu-operator/docs-manifests/time-slicing-config-all.yaml"))[0]
        cluster.kubectl(
            "create", "configmap", "time-slicing-config", "-n", NAMESPACE,
            f"--from-literal=any={docs['data']['any']}",
        )  # fmt: skip
        cluster.kubectl("rollout", "restart", "-n", NAMESPACE, "ds/nvdp-nvidia-device-plugin")
        after = cluster.node("gpu-1")
        assert allocatable(cluster, "gpu-1") == {"nvidia.com/gpu": "8"}
        assert (after.mode.value, after.replicas) == ("time-slicing", 4)
        assert after.config is not None
        assert after.config.source == "configmap/time-slicing-config#any"


def test_chart_render_packed_policy_is_shown_with_the_mode(tmp_path: Path) -> None:
    with applied_to(tmp_path, [SimNode("gpu-1")]) as cluster:
        cluster.apply(real(f"{CHART}/packed-policy.yaml"), namespace=NAMESPACE)
        snapshot = cluster.snapshot()
        node = cluster.node_json("gpu-1")
        assert node["config"]["allocation_policy"] == "packed"
    with applied_to(tmp_path, [SimNode("gpu-1")]) as cluster:
        cluster.apply(real(f"{CHART}/default.yaml"), namespace=NAMESPACE)
        assert cluster.node_json("gpu-1")["config"]["allocation_policy"] == "distributed"
    assert snapshot.plugin.allocation_policy == "packed"  # the summary's plugin object


def test_chart_render_mig_mixed_v020_accounts_me_and_gfx_profiles(tmp_path: Path) -> None:
    """v0.20 advertises `+me`/`+gfx` MIG profiles as resources of their own (`.me`, `.gfx`)."""
    profiles = ["1g.10gb", "1g.10gb+me", "1g.20gb+gfx", "3g.40gb"]
    with applied_to(tmp_path, [SimNode("gpu-1", mig=profiles)]) as cluster:
        cluster.apply(real(f"{CHART}/mig-mixed-flag.yaml"), namespace=NAMESPACE)
        cluster.kubectl("run", "me-job", "--image=cuda", "--overrides", _limits("1g.10gb.me"))
        assert allocatable(cluster, "gpu-1") == {
            "nvidia.com/gpu": "1",
            "nvidia.com/mig-1g.10gb": "1",
            "nvidia.com/mig-1g.10gb.me": "1",
            "nvidia.com/mig-1g.20gb.gfx": "1",
            "nvidia.com/mig-3g.40gb": "1",
        }
        node = cluster.node("gpu-1")
        mig = {d.profile: d for gpu in node.gpus for d in gpu.mig_devices}
        assert mig["1g.10gb+me"].resource == "nvidia.com/mig-1g.10gb.me"
        assert mig["1g.20gb+gfx"].resource == "nvidia.com/mig-1g.20gb.gfx"
        assert [h.pod for h in mig["1g.10gb+me"].holders] == ["default/me-job"]
        assert mig["1g.10gb"].holders == []
        me = node.resources["nvidia.com/mig-1g.10gb.me"]
        assert (me.allocatable, me.requested, me.free) == (1, 1, 0)
        assert node.resources["nvidia.com/mig-1g.20gb.gfx"].free == 1


def _limits(profile: str) -> str:
    resource = f"nvidia.com/mig-{profile}"
    container = {"name": "me-job", "image": "cuda", "resources": {"limits": {resource: "1"}}}
    return json.dumps({"spec": {"nodeName": "gpu-1", "containers": [container]}})
