"""Built-in scenarios load and show what they promise; bad scenarios are clear errors."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pytest

from app.errors import ConfigError
from app.simulator import main
from app.simulator.apiserver.resources import EVENT, NODE, POD, RESOURCES
from app.simulator.world.cluster import SimulatedCluster
from app.simulator.world.scenario import BUILTIN_SCENARIOS, read_scenario


def alloc(sim: SimulatedCluster) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in sim.inventories:
        node = sim.get("Node", name)
        assert node is not None
        out[name] = node["status"]["allocatable"].get("nvidia.com/gpu")
    return out


@pytest.mark.parametrize("name", BUILTIN_SCENARIOS)
def test_builtin_scenario_loads_with_default_plugin_names(name: str) -> None:
    sim = SimulatedCluster(name)
    assert sim.scenario.plugin_name == "nvidia-device-plugin-daemonset"
    assert sim.scenario.plugin_namespace == "kube-system"


def test_host_split_one_k3s_server_two_slots_no_configmap() -> None:
    sim = SimulatedCluster("host-split")
    assert alloc(sim) == {"gpu-server-1": "2"}
    assert sim.inventories["gpu-server-1"].k3s
    assert sim.store.objects(RESOURCES[2]) == []  # no ConfigMap at all
    hosts = {p.gpu_index for p in sim.processes() if not p.is_pod}
    assert hosts == {0, 1}


def test_time_slicing_replicas_8() -> None:
    assert alloc(SimulatedCluster("time-slicing")) == {
        "gpu-node-a": "32",
        "gpu-node-b": "32",
        "gpu-node-c": "16",
    }


def test_broken_shows_stale_config_crash_and_silent_zero() -> None:
    sim = SimulatedCluster("broken")
    cm = sim.get("ConfigMap", "nvidia-device-plugin-config", "kube-system")
    assert cm is not None and "replicas: 8" in cm["data"]["config.yaml"]
    assert alloc(sim) == {
        "broken-1": "15",
        "broken-2": "8",
        "broken-gb10": None,
        "broken-k3s": None,
    }
    gb10, k3s = sim.plugin_outcome("broken-gb10"), sim.plugin_outcome("broken-k3s")
    assert gb10 is not None and gb10.state == "crash"
    assert k3s is not None and k3s.state == "running" and not k3s.capacity


def test_demo_first_node_is_the_host_split_server() -> None:
    sim = SimulatedCluster("demo")
    assert next(iter(sim.inventories)) == "gpu-server-1"
    assert alloc(sim)["gpu-server-1"] == "2"
    assert sim.scenario.loop and sim.scenario.steps
    outcome = sim.plugin_outcome("gpu-ws-5")
    assert outcome is not None and outcome.state == "crash"


def test_empty_has_only_the_system_namespaces() -> None:
    sim = SimulatedCluster("empty")
    for resource in RESOURCES:
        objects = sim.store.objects(resource)
        if resource.kind == "Namespace":
            assert {o["metadata"]["name"] for o in objects} == {
                "default",
                "kube-system",
                "kube-public",
                "kube-node-lease",
            }
        else:
            assert objects == []


def test_scenario_by_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("nodes:\n  - name: n1\n    gpu_count: 2\n")
    sim = SimulatedCluster(path)
    assert [g.uuid for g in sim.inventories["n1"].gpus] == [
        g.uuid for g in read_scenario(path).inventories[0].gpus
    ]
    assert alloc(sim) == {"n1": None}  # no plugin DaemonSet: nothing advertised


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: [{gpu_count: 1}]", "name"),
        ("objects: [{kind: Pod}]", "kind and metadata"),
        ("objects: [{kind: CronJob, metadata: {name: s}}]", "unsupported kind"),
        ("workload: {steps: [{after_s: 1}]}", "exactly one"),
        ("objects: [{kind: ConfigMap, metadata: {name: BAD}}]", "invalid"),
        ("[1, 2", "invalid YAML"),
    ],
)
def test_bad_scenario_is_a_config_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        SimulatedCluster(path)


def test_unknown_scenario_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown scenario"):
        SimulatedCluster("no-such-scenario")


def test_simulate_command_bad_scenario_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    main.add_arguments(parser)
    assert main.run(parser.parse_args(["--scenario", "nope", "--port", "0"])) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_clusters_two_installs_mig_mixed_config_label_and_cordon() -> None:
    sim = SimulatedCluster("clusters")
    gpu = {
        name: {
            k: v
            for k, v in (sim.get("Node", name) or {})["status"]["allocatable"].items()
            if k.startswith("nvidia.com/")
        }
        for name in sim.inventories
    }
    assert gpu == {
        "gpu-basic-1": {"nvidia.com/gpu": "4"},
        "gpu-cordoned-2": {"nvidia.com/gpu": "2"},
        "gpu-ts-3": {"nvidia.com/gpu": "16"},
        "gpu-mig-4": {
            "nvidia.com/gpu": "1",
            "nvidia.com/mig-1g.10gb": "7",
            "nvidia.com/mig-3g.40gb": "2",
        },
        "gpu-op-5": {"nvidia.com/gpu": "4"},
        "gpu-over-6": {"nvidia.com/gpu": "1"},
    }
    owners = {
        p["spec"][
            "nodeName"
        ]: f"{p['metadata']['namespace']}/{p['metadata']['ownerReferences'][0]['name']}"
        for p in sim.store.objects(RESOURCES[1])
        if p["metadata"].get("ownerReferences", [{}])[0].get("kind") == "DaemonSet"
    }
    assert owners == {
        "gpu-basic-1": "kube-system/nvidia-device-plugin-daemonset",
        "gpu-cordoned-2": "kube-system/nvidia-device-plugin-daemonset",
        "gpu-ts-3": "nvidia-device-plugin/nvidia-device-plugin",
        "gpu-mig-4": "nvidia-device-plugin/nvidia-device-plugin",
        "gpu-op-5": "gpu-operator/nvidia-device-plugin-daemonset",
        "gpu-over-6": "kube-system/nvidia-device-plugin-daemonset",
    }
    cordoned = sim.get("Node", "gpu-cordoned-2")
    assert cordoned is not None and cordoned["spec"]["unschedulable"] is True
    report = sim.report("gpu-mig-4")
    assert report is not None and report.assignments is not None
    assert [len(g.mig_devices) for g in report.gpus] == [7, 2, 0]
    assert [(a.pod, a.resource, a.device_ids) for a in report.assignments] == [
        ("mig-small-0", "nvidia.com/mig-1g.10gb", [report.gpus[0].mig_devices[0].uuid])
    ]


def test_config_label_change_restarts_a_config_manager_plugin_with_the_new_key() -> None:
    sim = SimulatedCluster("clusters")
    node = copy.deepcopy(sim.get("Node", "gpu-ts-3"))
    assert node is not None
    node["metadata"]["labels"]["nvidia.com/device-plugin.config"] = "default"
    sim.registry.put(RESOURCES[0], node)
    updated = sim.get("Node", "gpu-ts-3")
    assert updated is not None and updated["status"]["allocatable"]["nvidia.com/gpu"] == "4"


def test_config_manager_reloads_in_place_and_a_missing_key_keeps_the_old_config() -> None:
    sim = SimulatedCluster("clusters")

    def plugin_pods() -> list[tuple[str, bool]]:
        return [
            (p["metadata"]["name"], all(c["ready"] for c in p["status"]["containerStatuses"]))
            for p in sim.registry.store.objects(POD)
            if p["spec"].get("nodeName") == "gpu-ts-3"
            and p["metadata"]["namespace"] == "nvidia-device-plugin"
        ]

    def label(value: str) -> dict[str, str]:
        node = copy.deepcopy(sim.get("Node", "gpu-ts-3"))
        assert node is not None
        node["metadata"]["labels"]["nvidia.com/device-plugin.config"] = value
        sim.registry.put(NODE, node)
        updated = sim.get("Node", "gpu-ts-3")
        assert updated is not None
        return dict(updated["status"]["allocatable"])

    before = plugin_pods()
    assert len(before) == 1 and before[0][1] is True
    assert label("default")["nvidia.com/gpu"] == "4"
    assert plugin_pods() == before  # the sidecar signals the plugin: same pod, new config
    assert label("no-such-key")["nvidia.com/gpu"] == "4"  # the sidecar fails, old config kept
    assert plugin_pods() == [(before[0][0], False)]  # NotReady while the sidecar crash-loops
    events = [
        e["message"]
        for e in sim.registry.store.objects(EVENT)
        if e.get("reason") == "BackOff" and e["involvedObject"].get("name") == before[0][0]
    ]
    assert events == [
        "Back-off restarting failed container: config-manager: specified config no-such-key "
        "does not exist"
    ]
    assert label("ts4")["nvidia.com/gpu"] == "16"  # a key that exists: the sidecar recovers
    assert plugin_pods() == before
