"""What the NVIDIA device plugin would advertise on a node, given its pod template.

A pure function of the DaemonSet's pod template, the ConfigMaps it can mount and the
node's simulated GPUs (see shared/reference/device-plugin.md):

- the container runtime decides which GPUs the plugin container sees: every GPU when the
  container is privileged, else `NVIDIA_VISIBLE_DEVICES` (UUIDs or indexes; unset/`all` =
  all; `none` = none; `void` = no NVIDIA runtime at all); on k3s no NVIDIA runtime runs
  without `runtimeClassName: nvidia`; an unknown device id fails container creation;
- without NVML (no runtime) the plugin exits unless `FAIL_ON_INIT_ERROR=false`, in which
  case it runs and advertises nothing; zero visible GPUs: runs, advertises nothing;
- the config file is read only from `CONFIG_FILE`, at the path where a volume mount puts
  the ConfigMap key; an invalid config (no resources, replicas < 2, ...) makes it exit;
- images before the unified-memory fix (v0.17.4 in 0.17, v0.18.0+) exit on a GPU whose
  memory query answers Not Supported;
- time-slicing multiplies each GPU by `replicas`, `renameByDefault` moves the slots to
  `nvidia.com/gpu.shared`; an unhealthy GPU is counted in capacity, and takes one slot out
  of allocatable (the v0.15-v0.19 replica health bug takes one, not `replicas`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from app.simulator.node.inventory import NodeInventory, SimGpu
from app.simulator.plugin.config_manager import (
    ConfigManagerError,
    base_devices,
    config_manager_file,
    mig_strategy,
)

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
ConfigMapLookup = Callable[[str], Mapping[str, Any] | None]

PodState = Literal["running", "crash", "pending"]


@dataclass(frozen=True)
class PluginOutcome:
    """The plugin pod's state on one node and the resources the kubelet then reports."""

    state: PodState
    message: str
    capacity: dict[str, int] = field(default_factory=dict)
    allocatable: dict[str, int] = field(default_factory=dict)
    visible: tuple[int, ...] = ()
    replicas: int = 1
    strategy: str = "none"  # none | time-slicing | mps
    renamed: bool = False
    fail_requests_greater_than_one: bool = False
    devices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # kubelet device ids
    mig_strategy: str = "none"

    @property
    def ready(self) -> bool:
        return self.state == "running"


class PluginConfigError(ValueError):
    """The config file would make the plugin exit."""


@dataclass(frozen=True)
class Sharing:
    strategy: str
    replicas: int
    renamed: bool
    fail_requests_greater_than_one: bool


def plugin_container(template_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The container running the plugin: by image or name, else the first one."""
    containers: list[Mapping[str, Any]] = list(template_spec.get("containers") or [])
    for container in containers:
        image = str(container.get("image", ""))
        if "k8s-device-plugin" in image and "config-manager" not in (
            container.get("command") or []
        ):
            return container
    for container in containers:
        if "device-plugin" in str(container.get("name", "")):
            return container
    return containers[0] if containers else {}


def container_env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value", ""))
        for e in container.get("env") or []
        if isinstance(e, Mapping) and "value" in e
    }


_VERSION = re.compile(r":v?(\d+)\.(\d+)\.(\d+)")


def has_unified_memory_fix(image: str) -> bool:
    """v0.17.4+ in the 0.17 line, v0.18.0+; an unparsable tag counts as fixed."""
    match = _VERSION.search(image)
    if not match:
        return True
    major, minor, patch = (int(g) for g in match.groups())
    version = (major, minor, patch)
    if version[:2] == (0, 17):
        return patch >= 4
    return version >= (0, 18, 0)


def _visible_gpus(
    container: Mapping[str, Any], env: Mapping[str, str], gpus: tuple[SimGpu, ...]
) -> tuple[SimGpu, ...] | None:
    """GPUs NVML sees in the container; None when the NVIDIA runtime injects nothing."""
    if (container.get("securityContext") or {}).get("privileged") is True:
        return gpus
    wanted = env.get("NVIDIA_VISIBLE_DEVICES")
    if wanted is None or wanted.strip() in ("", "all"):
        return gpus
    if wanted.strip() == "void":
        return None
    if wanted.strip() == "none":
        return ()
    chosen: list[SimGpu] = []
    for item in (w.strip() for w in wanted.split(",") if w.strip()):
        gpu = next((g for g in gpus if g.uuid == item or str(g.index) == item), None)
        if gpu is None:
            raise LookupError(f"nvidia-container-cli: device error: {item}: unknown device")
        if gpu not in chosen:
            chosen.append(gpu)
    return tuple(chosen)


def mounted_config(
    template_spec: Mapping[str, Any],
    container: Mapping[str, Any],
    path: str,
    configmaps: ConfigMapLookup,
) -> tuple[str | None, str | None]:
    """(file content at `path`, error) as the container would see it through its mounts.

    Returns (None, None) when no mount covers the path, and an error for a mount of a
    missing (non-optional) ConfigMap: the pod then never starts.
    """
    volumes = {v.get("name"): v for v in template_spec.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name")) or {}
        source = volume.get("configMap")
        if not isinstance(source, Mapping):
            continue
        mount_path = str(mount.get("mountPath", "")).rstrip("/")
        configmap = configmaps(str(source.get("name", "")))
        if configmap is None:
            if source.get("optional") is True:
                continue
            return None, f'configmap "{source.get("name")}" not found'
        data: Mapping[str, str] = configmap.get("data") or {}
        if mount.get("subPath"):
            files = {mount_path: data.get(str(mount["subPath"]))}
        elif source.get("items"):
            files = {
                f"{mount_path}/{item.get('path')}": data.get(str(item.get("key")))
                for item in source["items"]
            }
        else:
            files = {f"{mount_path}/{key}": value for key, value in data.items()}
        content = files.get(path)
        if content is not None:
            return content, None
    return None, None


def _normalise_name(name: str) -> str:
    return name if name.startswith("nvidia.com/") else f"nvidia.com/{name}"


def parse_sharing(text: str) -> Sharing:
    """Parse a plugin config file's sharing block; raise PluginConfigError when invalid."""
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PluginConfigError(f"unable to parse config file: {exc}") from exc
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise PluginConfigError("unable to parse config file: not a mapping")
    version = config.get("version") or "v1"
    if version != "v1":
        raise PluginConfigError(f"unknown version: {version}")
    sharing = config.get("sharing") or {}
    if not isinstance(sharing, dict):
        raise PluginConfigError("unable to parse config file: sharing is not a mapping")
    strategy, block = "none", None
    if sharing.get("mps") is not None:
        strategy, block = "mps", sharing["mps"]
    elif "timeSlicing" in sharing:
        strategy, block = "time-slicing", sharing["timeSlicing"] or {}
    if block is None:
        return Sharing("none", 1, False, False)
    if not isinstance(block, dict):
        raise PluginConfigError(f"unable to parse {strategy} config")
    entries = block.get("resources")
    if not entries or not isinstance(entries, list):
        raise PluginConfigError("no resources specified")
    replicas = 1
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("name"):
            raise PluginConfigError("no resource name specified")
        if "replicas" not in entry:
            raise PluginConfigError("no replicas specified")
        value = entry["replicas"]
        if not isinstance(value, int) or isinstance(value, bool):
            raise PluginConfigError(f"unable to parse replicas: {value!r}")
        if value < 2:
            raise PluginConfigError("number of replicas must be >= 2")
        if _normalise_name(str(entry["name"])) == GPU_RESOURCE:
            replicas = value
    if replicas == 1:  # no entry names nvidia.com/gpu: replication has no effect
        strategy = "none"
    renamed = block.get("renameByDefault") is True and replicas > 1
    fail_gt_one = strategy == "mps" or block.get("failRequestsGreaterThanOne") is True
    return Sharing(strategy, replicas, renamed, fail_gt_one)


def advertised(
    template_spec: Mapping[str, Any],
    inventory: NodeInventory,
    configmaps: ConfigMapLookup,
    *,
    node_labels: Mapping[str, str] | None = None,
) -> PluginOutcome:
    """The plugin's outcome on one node for this pod template."""
    container = plugin_container(template_spec)
    env = container_env(container)
    fail_on_init = env.get("FAIL_ON_INIT_ERROR", "true").strip().lower() not in ("false", "0")
    config_file = env.get("CONFIG_FILE")
    sharing = Sharing("none", 1, False, False)
    content: str | None = None
    if config_file:
        content, mount_error = mounted_config(template_spec, container, config_file, configmaps)
        if mount_error:
            return PluginOutcome("pending", f"MountVolume.SetUp failed: {mount_error}")
        handled = False
        if content is None:
            try:
                handled, content = config_manager_file(
                    template_spec, config_file, configmaps, node_labels or {}
                )
            except ConfigManagerError as exc:
                return PluginOutcome("crash", f"config-manager: {exc}")
        if content is None and not handled:
            return PluginOutcome(
                "crash", f"unable to load config: open {config_file}: no such file or directory"
            )
        try:
            sharing = parse_sharing(content) if content is not None else sharing
        except PluginConfigError as exc:
            return PluginOutcome("crash", f"unable to load config: {exc}")
    else:
        _, mount_error = mounted_config(template_spec, container, "", configmaps)
        if mount_error:
            return PluginOutcome("pending", f"MountVolume.SetUp failed: {mount_error}")
    runtime = not inventory.k3s or template_spec.get("runtimeClassName") == "nvidia"
    try:
        visible = _visible_gpus(container, env, inventory.gpus) if runtime else None
    except LookupError as exc:
        return PluginOutcome("crash", str(exc))
    if visible is None:
        if fail_on_init:
            return PluginOutcome(
                "crash",
                "failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND "
                "(is the NVIDIA container runtime configured for this pod?)",
            )
        return PluginOutcome("running", "No devices found. Waiting indefinitely.")
    if not visible:
        return PluginOutcome("running", "No devices found. Waiting indefinitely.")
    image = str(container.get("image", ""))
    if not has_unified_memory_fix(image) and any(not g.memory_supported for g in visible):
        return PluginOutcome("crash", "error getting device memory: Not Supported")
    strategy = mig_strategy(env, content)
    if sharing.strategy == "mps" and strategy == "mixed":
        return PluginOutcome("crash", "using --mig-strategy=mixed is not supported with MPS")
    if sharing.strategy == "mps" and not _mps_daemon_runs(inventory, node_labels or {}):
        # The MPS control daemon DaemonSet selects nvidia.com/mps.capable=true (written by
        # GFD from the same config); without it the plugin waits and registers nothing.
        return PluginOutcome(
            "running",
            "Failed to start plugin: error waiting for MPS daemon. Retrying in 30s",
            visible=tuple(g.index for g in visible),
            replicas=sharing.replicas,
            strategy=sharing.strategy,
        )
    try:
        base = base_devices(visible, strategy, image)
    except ValueError as exc:
        return PluginOutcome("crash", str(exc))
    capacity: dict[str, int] = {}
    allocatable: dict[str, int] = {}
    devices: dict[str, tuple[str, ...]] = {}
    for resource, entries in base.items():
        replicas = sharing.replicas if resource == GPU_RESOURCE else 1
        name = SHARED_RESOURCE if resource == GPU_RESOURCE and sharing.renamed else resource
        ids = (
            [f"{i}::{n}" for _, i in entries for n in range(replicas)]
            if replicas > 1
            else [i for _, i in entries]
        )
        unhealthy = len({g.index for g, _ in entries if not g.healthy})
        capacity[name] = len(ids)
        allocatable[name] = len(ids) - unhealthy
        devices[name] = tuple(ids)
    names = ", ".join(f"'{n}'" for n in capacity)
    return PluginOutcome(
        "running",
        f"Registered device plugin for {names} with Kubelet",
        capacity=capacity,
        allocatable=allocatable,
        visible=tuple(g.index for g in visible),
        replicas=sharing.replicas,
        strategy=sharing.strategy,
        renamed=sharing.renamed,
        fail_requests_greater_than_one=sharing.fail_requests_greater_than_one,
        devices=devices,
        mig_strategy=strategy,
    )


def _mps_daemon_runs(inventory: NodeInventory, labels: Mapping[str, str]) -> bool:
    """The MPS daemon runs where the node is labelled MPS-capable (GFD labels it itself)."""
    return labels.get("nvidia.com/mps.capable") == "true" or inventory.gfd
