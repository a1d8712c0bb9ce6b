"""Device-plugin emulation: what a node advertises for a pod template (table-driven)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.simulator.node.inventory import NodeInventory, SimGpu
from app.simulator.plugin.advertised import advertised
from app.simulator.plugin.container import has_unified_memory_fix
from app.simulator.plugin.outcome import PluginOutcome
from app.simulator.plugin.sharing import PluginConfigError, parse_sharing

GPUS = tuple(SimGpu(i, f"GPU-{i}000") for i in range(4))
NODE = NodeInventory("n1", GPUS)
K3S = NodeInventory("n1", GPUS, k3s=True)


def config(replicas: Any = 4, *, rename: bool = False, extra: str = "") -> str:
    return (
        "version: v1\nsharing:\n  timeSlicing:\n"
        f"    renameByDefault: {str(rename).lower()}\n{extra}"
        f"    resources:\n    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
    )


def template(
    *,
    env: dict[str, str] | None = None,
    image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
    privileged: bool = False,
    runtime_class: str | None = None,
    mount: dict[str, Any] | None = None,
    volume: dict[str, Any] | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "nvidia-device-plugin-ctr",
        "image": image,
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        "volumeMounts": [mount] if mount else [],
    }
    if privileged:
        container["securityContext"] = {"privileged": True}
    spec: dict[str, Any] = {"containers": [container], "volumes": [volume] if volume else []}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return spec


CM_VOLUME = {"name": "cfg", "configMap": {"name": "plugin-config"}}
CM_MOUNT = {"name": "cfg", "mountPath": "/config"}


def lookup(data: dict[str, str] | None) -> Any:
    return lambda name: {"data": data} if data is not None and name == "plugin-config" else None


CASES: list[
    tuple[str, dict[str, Any], NodeInventory, dict[str, str] | None, str, dict[str, int]]
] = [
    ("basic: every GPU", {}, NODE, None, "running", {"nvidia.com/gpu": 4}),
    (
        "visible devices by UUID",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "GPU-2000,GPU-3000"}},
        NODE,
        None,
        "running",
        {"nvidia.com/gpu": 2},
    ),
    (
        "visible devices by index",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "1"}},
        NODE,
        None,
        "running",
        {"nvidia.com/gpu": 1},
    ),
    (
        "visible devices all",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "all"}},
        NODE,
        None,
        "running",
        {"nvidia.com/gpu": 4},
    ),
    (
        "visible devices none: runs, advertises nothing",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "none"}},
        NODE,
        None,
        "running",
        {},
    ),
    (
        "visible devices void: no NVML, crashes",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "void"}},
        NODE,
        None,
        "crash",
        {},
    ),
    (
        "unknown device id: container creation fails",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "GPU-nope"}},
        NODE,
        None,
        "crash",
        {},
    ),
    (
        "privileged sees every GPU anyway",
        {"env": {"NVIDIA_VISIBLE_DEVICES": "GPU-2000"}, "privileged": True},
        NODE,
        None,
        "running",
        {"nvidia.com/gpu": 4},
    ),
    ("k3s without runtimeClassName: no NVML, crashes", {}, K3S, None, "crash", {}),
    (
        "k3s without runtimeClassName, FAIL_ON_INIT_ERROR=false: silent 0",
        {"env": {"FAIL_ON_INIT_ERROR": "false"}},
        K3S,
        None,
        "running",
        {},
    ),
    (
        "k3s with runtimeClassName nvidia",
        {"runtime_class": "nvidia"},
        K3S,
        None,
        "running",
        {"nvidia.com/gpu": 4},
    ),
    (
        "time-slicing: CONFIG_FILE at the mounted key",
        {"env": {"CONFIG_FILE": "/config/config.yaml"}, "mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        {"config.yaml": config(4)},
        "running",
        {"nvidia.com/gpu": 16},
    ),
    (
        "time-slicing with visible devices",
        {
            "env": {"CONFIG_FILE": "/config/config.yaml", "NVIDIA_VISIBLE_DEVICES": "GPU-0000"},
            "mount": CM_MOUNT,
            "volume": CM_VOLUME,
        },
        NODE,
        {"config.yaml": config(8)},
        "running",
        {"nvidia.com/gpu": 8},
    ),
    (
        "ConfigMap mounted without CONFIG_FILE is ignored",
        {"mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        {"config.yaml": config(4)},
        "running",
        {"nvidia.com/gpu": 4},
    ),
    (
        "CONFIG_FILE naming another path: the plugin exits",
        {"env": {"CONFIG_FILE": "/etc/other.yaml"}, "mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        {"config.yaml": config(4)},
        "crash",
        {},
    ),
    (
        "config via volume items",
        {
            "env": {"CONFIG_FILE": "/config/ts.yaml"},
            "mount": CM_MOUNT,
            "volume": {
                "name": "cfg",
                "configMap": {
                    "name": "plugin-config",
                    "items": [{"key": "any", "path": "ts.yaml"}],
                },
            },
        },
        NODE,
        {"any": config(2)},
        "running",
        {"nvidia.com/gpu": 8},
    ),
    (
        "config via subPath mount",
        {
            "env": {"CONFIG_FILE": "/cfg.yaml"},
            "mount": {"name": "cfg", "mountPath": "/cfg.yaml", "subPath": "config.yaml"},
            "volume": CM_VOLUME,
        },
        NODE,
        {"config.yaml": config(3)},
        "running",
        {"nvidia.com/gpu": 12},
    ),
    (
        "renameByDefault moves slots to nvidia.com/gpu.shared",
        {"env": {"CONFIG_FILE": "/config/config.yaml"}, "mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        {"config.yaml": config(4, rename=True)},
        "running",
        {"nvidia.com/gpu.shared": 16},
    ),
    (
        "replicas 1 is invalid: crash",
        {"env": {"CONFIG_FILE": "/config/config.yaml"}, "mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        {"config.yaml": config(1)},
        "crash",
        {},
    ),
    (
        "unparsable config: crash",
        {"env": {"CONFIG_FILE": "/config/config.yaml"}, "mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        {"config.yaml": "sharing: [unclosed"},
        "crash",
        {},
    ),
    (
        "mounted ConfigMap missing: pod stuck ContainerCreating",
        {"env": {"CONFIG_FILE": "/config/config.yaml"}, "mount": CM_MOUNT, "volume": CM_VOLUME},
        NODE,
        None,
        "pending",
        {},
    ),
    (
        "old image on a unified-memory GPU: crash",
        {"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"},
        NodeInventory("n1", (SimGpu(0, "GPU-u", memory_supported=False),)),
        None,
        "crash",
        {},
    ),
    (
        "fixed image on a unified-memory GPU",
        {"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.4"},
        NodeInventory("n1", (SimGpu(0, "GPU-u", memory_supported=False),)),
        None,
        "running",
        {"nvidia.com/gpu": 1},
    ),
]


@pytest.mark.parametrize(
    ("case", "tmpl", "node", "data", "state", "capacity"), CASES, ids=[c[0] for c in CASES]
)
def test_advertised_follows_plugin_rules(
    case: str,
    tmpl: dict[str, Any],
    node: NodeInventory,
    data: dict[str, str] | None,
    state: str,
    capacity: dict[str, int],
) -> None:
    outcome = advertised(template(**tmpl), node, lookup(data))
    assert (outcome.state, outcome.capacity) == (state, capacity), outcome.message


def test_advertised_unhealthy_gpu_counts_in_capacity_not_allocatable() -> None:
    gpus = (SimGpu(0, "GPU-a"), SimGpu(1, "GPU-b", healthy=False))
    outcome = advertised(template(), NodeInventory("n1", gpus), lookup(None))
    assert outcome.capacity == {"nvidia.com/gpu": 2}
    assert outcome.allocatable == {"nvidia.com/gpu": 1}


@pytest.mark.parametrize(
    ("image", "fixed"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.3", False),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.4", True),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.16.2-ubi8", False),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.18.0", True),
        ("nvcr.io/nvidia/k8s-device-plugin:latest", True),
    ],
)
def test_has_unified_memory_fix_by_tag(image: str, fixed: bool) -> None:
    assert has_unified_memory_fix(image) is fixed


@pytest.mark.parametrize(
    "text",
    [
        "version: v2\n",
        "sharing:\n  timeSlicing: {}\n",
        "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
        "sharing:\n  timeSlicing:\n    resources:\n    - replicas: 4\n",
        "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: two\n",
    ],
)
def test_parse_sharing_invalid_config_raises(text: str) -> None:
    with pytest.raises(PluginConfigError):
        parse_sharing(text)


def test_parse_sharing_short_name_and_typo() -> None:
    assert parse_sharing(config(4).replace("nvidia.com/gpu", "gpu")).replicas == 4
    typo = parse_sharing(config(4).replace("nvidia.com/gpu", "nvidia.com/gpus"))
    # The plugin's SharingStrategy() is time-slicing once any entry replicates, even one
    # naming no device it has; nvidia.com/gpu itself stays at one slot per GPU.
    assert (typo.replicas, typo.strategy) == (1, "time-slicing")
    assert typo.replicas_of("nvidia.com/gpus") == 4


def test_parse_sharing_reads_lowercase_block_and_replicates_mig() -> None:
    text = (
        "sharing:\n  timeslicing:\n    resources:\n    - name: mig-1g.10gb\n      replicas: 3\n"
        "    - name: gpu\n      replicas: 2\n    - name: gpu\n      replicas: 5\n"
    )
    sharing = parse_sharing(text)
    assert (sharing.strategy, sharing.replicas) == ("time-slicing", 5)
    assert sharing.replicas_of("nvidia.com/mig-1g.10gb") == 3


def test_parse_sharing_mps_without_root_is_refused_and_with_env_accepted() -> None:
    text = "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 4\n"
    with pytest.raises(PluginConfigError, match="mps-root"):
        parse_sharing(text)
    assert parse_sharing(text, env={"MPS_ROOT": "/run/nvidia/mps"}).strategy == "mps"


def test_outcome_is_plain_data() -> None:
    outcome = advertised(template(), NODE, lookup(None))
    assert isinstance(outcome, PluginOutcome) and outcome.ready
    assert copy.deepcopy(outcome) == outcome
