"""Scenario files: plain Kubernetes objects plus simulated GPU nodes, processes and a timeline.

A scenario is one YAML mapping (every key optional)::

    description: One line shown by `gpu-slots simulate`.
    plugin: {name: nvidia-device-plugin-daemonset, namespace: kube-system}
    nodes:                       # nodes with simulated GPUs; each becomes a Node object
      - name: gpu-server-1
        k3s: true                # k3s: the plugin needs runtimeClassName: nvidia
        gfd: false               # write GPU-feature-discovery labels on plugin restarts
        pod_resources: true      # simulated agents report kubelet device assignments
        dra: false               # true: NVIDIA's DRA driver serves the node (ResourceSlices),
                                 # not the device plugin (app/simulator/dra/driver.py)
        labels: {nvidia.com/gpu.present: "true"}   # merged over hostname/os/arch labels
        annotations: {}
        capacity: {cpu: "64", memory: 512Gi}       # merged over defaults
        gpus:                    # or gpu_count / gpu_model / gpu_memory_mib shorthand
          - {index: 0, uuid: GPU-..., name: NVIDIA A100-SXM4-80GB, memory_total_mib: 81920,
             memory_supported: true, healthy: true, mig: [3g.40gb, 3g.40gb]}  # mig: MIG devices
        processes:
          - {gpu: 0, pid: 4101, used_memory_mib: 30000, command: python train.py, user: alice}
          - {gpu: 2, pod: ml/notebook-0, container: notebook, used_memory_mib: 9000,
             command: python serve.py}
    objects:                     # Namespace, Node, Pod, ConfigMap, DaemonSet or Event manifests
      - {apiVersion: v1, kind: ConfigMap, metadata: {...}, data: {...}}
    edits:                       # objects created or replaced AFTER the plugin pods started,
      - {<manifest>}             # without a restart (e.g. a stale ConfigMap edit)
    rollout:                     # a plugin rollout's pace (default 0: instant)
      terminating_s: 2           # each replaced plugin pod is Terminating this long,
      container_creating_s: 3    # then its successor ContainerCreating this long
    workload:                    # the timeline, run after start
      loop: true                 # start again after the last step (keeps the demo alive)
      steps:
        - {after_s: 5, start_process: {node: n, gpu: 1, pid: 5001, used_memory_mib: 2000,
                                       command: "...", user: bob}}
        - {after_s: 5, stop_process: {node: n, pid: 5001}}
        - {after_s: 3, create_pod: {<Pod manifest>}}
        - {after_s: 3, delete_pod: {namespace: ml, name: job-1}}

Pods in `objects` keep the status they are given; a pod without a status that names a
node is started by the simulated kubelet. Namespaces used by objects are created.
"""

from __future__ import annotations

import copy
import re
import uuid
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from app.domain.goyaml import Bounds, GoYamlError, load_first_document
from app.errors import ConfigError
from app.simulator.node.inventory import GpuProcess, NodeInventory, SimGpu, SimMig
from app.simulator.plugin.rollout import RolloutPace

BUILTIN_SCENARIOS = ("demo", "host-split", "time-slicing", "broken", "empty", "clusters", "dra")
DEFAULT_PLUGIN_NAME = "nvidia-device-plugin-daemonset"
DEFAULT_PLUGIN_NAMESPACE = "kube-system"
# The order objects are created in, so each finds what it refers to.
LOAD_ORDER = (
    "Namespace",
    "Node",
    "ConfigMap",
    "DaemonSet",
    "DeviceClass",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "Pod",
    "Event",
)
STEP_ACTIONS = ("start_process", "stop_process", "create_pod", "delete_pod")
_SCENARIO_BOUNDS = Bounds(max_bytes=4 * 1024 * 1024, max_nodes=1_000_000)  # a file of ours


@dataclass(frozen=True)
class WorkloadStep:
    after_s: float
    action: str
    args: dict[str, Any]


@dataclass
class Scenario:
    """A parsed scenario, ready to load into a simulator."""

    name: str
    description: str = ""
    plugin_name: str = DEFAULT_PLUGIN_NAME
    plugin_namespace: str = DEFAULT_PLUGIN_NAMESPACE
    inventories: list[NodeInventory] = field(default_factory=list)
    node_objects: list[dict[str, Any]] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    steps: list[WorkloadStep] = field(default_factory=list)
    loop: bool = False
    rollout_pace: RolloutPace = field(default_factory=RolloutPace)

    def daemonset_namespaces(self) -> list[str]:
        """Namespaces of DaemonSets other than the plugin namespace (their ConfigMaps)."""
        return _daemonset_namespaces(self)


def _daemonset_namespaces(scenario: Scenario) -> list[str]:
    return sorted(
        {
            str(o["metadata"].get("namespace"))
            for o in scenario.objects
            if o["kind"] == "DaemonSet"
            and o["metadata"].get("namespace")
            and o["metadata"].get("namespace") != scenario.plugin_namespace
        }
    )


def gpu_uuid(node: str, index: int) -> str:
    """A stable, UUID-shaped GPU id derived from the node name and index."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node}.gpu{index}.gpu-slots.sim"))


def read_scenario(name_or_path: str | Path) -> Scenario:
    """Load a built-in scenario by name, or a scenario file by path."""
    text_name = str(name_or_path)
    if text_name in BUILTIN_SCENARIOS:
        package = resources.files("app.simulator.world") / "scenarios" / f"{text_name}.yaml"
        return parse_scenario(package.read_text(encoding="utf-8"), name=text_name)
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(
            f"unknown scenario {text_name!r}: not a file, and not one of "
            f"{', '.join(BUILTIN_SCENARIOS)}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read scenario {path}: {exc}") from exc
    return parse_scenario(text, name=path.stem)


def parse_scenario(text: str, *, name: str = "scenario") -> Scenario:
    """Parse scenario YAML; raise ConfigError with the offending place on bad input."""
    try:
        data = load_first_document(text, _SCENARIO_BOUNDS)
    except GoYamlError as exc:
        raise ConfigError(f"scenario {name}: invalid YAML: {exc}") from exc
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"scenario {name}: the top level must be a mapping")
    try:
        return _build(data, name)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"scenario {name}: {exc!r}") from exc


def _build(data: dict[str, Any], name: str) -> Scenario:
    plugin = data.get("plugin") or {}
    scenario = Scenario(
        name=name,
        description=str(data.get("description") or ""),
        plugin_name=str(plugin.get("name") or DEFAULT_PLUGIN_NAME),
        plugin_namespace=str(plugin.get("namespace") or DEFAULT_PLUGIN_NAMESPACE),
    )
    for index, node in enumerate(data.get("nodes") or []):
        inventory = _inventory(node)
        scenario.inventories.append(inventory)
        scenario.node_objects.append(node_object(node, inventory, index=index))
        for process in node.get("processes") or []:
            scenario.processes.append(process_from(inventory.node, process))
    for obj in data.get("objects") or []:
        if not isinstance(obj, dict) or "kind" not in obj or "metadata" not in obj:
            raise ValueError(f"objects: each item needs kind and metadata: {obj!r}")
        scenario.objects.append(obj)
    for obj in data.get("edits") or []:
        if not isinstance(obj, dict) or "kind" not in obj or "metadata" not in obj:
            raise ValueError(f"edits: each item needs kind and metadata: {obj!r}")
        scenario.edits.append(obj)
    rollout = data.get("rollout") or {}
    scenario.rollout_pace = RolloutPace(
        terminating_s=float(rollout.get("terminating_s", 0)),
        creating_s=float(rollout.get("container_creating_s", 0)),
    )
    workload = data.get("workload") or {}
    scenario.loop = bool(workload.get("loop", False))
    for step in workload.get("steps") or []:
        actions = [a for a in STEP_ACTIONS if a in step]
        if len(actions) != 1:
            raise ValueError(f"workload step needs exactly one of {STEP_ACTIONS}: {step!r}")
        scenario.steps.append(
            WorkloadStep(float(step.get("after_s", 0)), actions[0], dict(step[actions[0]]))
        )
    return scenario


def _inventory(node: dict[str, Any]) -> NodeInventory:
    name = str(node["name"])
    gpus: list[SimGpu] = []
    for i, gpu in enumerate(node.get("gpus") or []):
        index = int(gpu.get("index", i))
        gpus.append(
            SimGpu(
                index=index,
                uuid=str(gpu.get("uuid") or gpu_uuid(name, index)),
                name=str(gpu.get("name", "NVIDIA A100-SXM4-80GB")),
                memory_total_mib=int(gpu.get("memory_total_mib", 81920)),
                memory_supported=bool(gpu.get("memory_supported", True)),
                healthy=bool(gpu.get("healthy", True)),
                mig_devices=_mig_devices(name, index, gpu.get("mig") or []),
            )
        )
    for index in range(len(gpus), int(node.get("gpu_count", 0))):
        gpus.append(
            SimGpu(
                index=index,
                uuid=gpu_uuid(name, index),
                name=str(node.get("gpu_model", "NVIDIA A100-SXM4-80GB")),
                memory_total_mib=int(node.get("gpu_memory_mib", 81920)),
            )
        )
    return NodeInventory(
        node=name,
        gpus=tuple(gpus),
        k3s=bool(node.get("k3s", False)),
        gfd=bool(node.get("gfd", False)),
        pod_resources=bool(node.get("pod_resources", False)),
        dra=bool(node.get("dra", False)),
    )


def _mig_devices(node: str, index: int, profiles: list[Any]) -> tuple[SimMig, ...]:
    """MIG devices from a list of profiles (`mig: [1g.10gb, 3g.40gb]`), memory from the name."""
    found = []
    for n, profile in enumerate(profiles):
        text = str(profile)
        match = re.search(r"(\d+)gb", text)
        if match is None:
            raise ValueError(f"MIG profile {text!r} of {node} GPU {index}: expected e.g. 1g.10gb")
        key = f"{node}.gpu{index}.mig{n}.gpu-slots.sim"
        found.append(
            SimMig(
                uuid="MIG-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, key)),
                profile=text,
                memory_total_mib=int(match[1]) * 1024 - 384,
            )
        )
    return tuple(found)


def process_from(node: str, spec: dict[str, Any]) -> GpuProcess:
    """A GpuProcess from a scenario or `/_sim/` mapping (`pod: ns/name` for pod processes)."""
    pod = spec.get("pod")
    namespace, pod_name = None, None
    if pod:
        namespace, _, pod_name = str(pod).rpartition("/")
        namespace = namespace or "default"
    return GpuProcess(
        node=node,
        gpu_index=int(spec["gpu"]),
        pid=int(spec.get("pid", 0)),
        used_memory_mib=int(spec.get("used_memory_mib", 0)),
        command=str(spec.get("command", "")),
        user=None if pod else str(spec.get("user", "root")),
        pod_namespace=namespace,
        pod_name=pod_name,
        container=str(spec.get("container")) if pod and spec.get("container") else None,
    )


def _node_spec(node: dict[str, Any]) -> dict[str, Any]:
    """`unschedulable: true` cordons the node (with the taint kubectl cordon leads to)."""
    spec: dict[str, Any] = {}
    taints = [dict(t) for t in node.get("taints") or []]
    if node.get("unschedulable"):
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    return spec


def _node_labels(node: dict[str, Any], inventory: NodeInventory) -> dict[str, str]:
    name = inventory.node
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
    }
    if inventory.k3s:
        labels["node.kubernetes.io/instance-type"] = "k3s"
    labels.update({str(k): str(v) for k, v in (node.get("labels") or {}).items()})
    return labels


def _capacity(node: dict[str, Any]) -> dict[str, str]:
    capacity = {
        "cpu": "64",
        "memory": "527958132Ki",
        "ephemeral-storage": "1844563564Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "pods": "110",
    }
    capacity.update({str(k): str(v) for k, v in (node.get("capacity") or {}).items()})
    return capacity


def _ready_condition(node: dict[str, Any]) -> dict[str, str]:
    if node.get("ready", True):
        return {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    return {
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
    }


def _node_info(inventory: NodeInventory) -> dict[str, str]:
    kubelet = "v1.32.0+k3s1" if inventory.k3s else "v1.32.0"
    return {
        "kubeletVersion": kubelet,
        "kubeProxyVersion": kubelet,
        "containerRuntimeVersion": "containerd://1.7.23-k3s2"
        if inventory.k3s
        else "containerd://1.7.23",
        "operatingSystem": "linux",
        "architecture": "amd64",
        "osImage": "Ubuntu 22.04.5 LTS",
        "kernelVersion": "5.15.0-126-generic",
        "machineID": "",
        "systemUUID": "",
        "bootID": "",
    }


def node_object(
    node: dict[str, Any], inventory: NodeInventory, *, index: int = 0
) -> dict[str, Any]:
    """The Node object of a simulated GPU node, as a kubelet would register it."""
    name = inventory.node
    capacity = _capacity(node)
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": _node_labels(node, inventory)},
        "spec": _node_spec(node),
        "status": {
            "capacity": capacity,
            "allocatable": copy.deepcopy(capacity),
            "conditions": [_ready_condition(node)],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.0.{10 + index % 240}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": _node_info(inventory),
        },
    }
    if node.get("annotations"):
        obj["metadata"]["annotations"] = {str(k): str(v) for k, v in node["annotations"].items()}
    return obj
