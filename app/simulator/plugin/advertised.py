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

from collections.abc import Mapping
from typing import Any

from app.domain.bounds import MAX_COUNT
from app.simulator.node.inventory import NodeInventory, SimGpu
from app.simulator.plugin.config_manager import ConfigManagerError, config_manager_file
from app.simulator.plugin.container import (
    ConfigMapLookup,
    container_env,
    has_unified_memory_fix,
    image_version,
    mounted_config,
    plugin_container,
    visible_gpus,
)
from app.simulator.plugin.mig import base_devices
from app.simulator.plugin.outcome import PluginOutcome
from app.simulator.plugin.sharing import PluginConfigError, Sharing, parse_sharing

NO_DEVICES = "No devices found. Waiting indefinitely."
# What the Go runtime says when the plugin's device list cannot be made (replicas past what
# any node could hold): the process dies, as it would trying to list 2**63-1 devices.
OUT_OF_MEMORY = "fatal error: runtime: out of memory"


def _config(
    template_spec: Mapping[str, Any],
    container: Mapping[str, Any],
    configmaps: ConfigMapLookup,
    node_labels: Mapping[str, str],
) -> Sharing | PluginOutcome:
    """What the plugin starts with (its config file and env, read once), or the outcome of
    failing to start."""
    config_file = container_env(container).get("CONFIG_FILE")
    content: str | None = None
    if not config_file:
        _, mount_error = mounted_config(template_spec, container, "", configmaps)
        if mount_error:
            return PluginOutcome("pending", f"MountVolume.SetUp failed: {mount_error}")
    else:
        content, mount_error = mounted_config(template_spec, container, config_file, configmaps)
        if mount_error:
            return PluginOutcome("pending", f"MountVolume.SetUp failed: {mount_error}")
        handled = False
        if content is None:
            try:
                handled, content = config_manager_file(
                    template_spec, config_file, configmaps, node_labels
                )
            except ConfigManagerError as exc:
                return PluginOutcome("crash", f"config-manager: {exc}")
        if content is None and not handled:
            return PluginOutcome(
                "crash", f"unable to load config: open {config_file}: no such file or directory"
            )
    version = image_version(str(container.get("image", "")))
    try:
        return parse_sharing(content, env=container_env(container), version=version)
    except PluginConfigError as exc:
        return PluginOutcome("crash", f"unable to load config: {exc}")


def _visible(
    template_spec: Mapping[str, Any],
    container: Mapping[str, Any],
    inventory: NodeInventory,
    *,
    fail_on_init: bool,
) -> tuple[SimGpu, ...] | PluginOutcome:
    """The GPUs the plugin sees through the container runtime, or the outcome without any."""
    env = container_env(container)
    runtime = not inventory.k3s or template_spec.get("runtimeClassName") == "nvidia"
    try:
        visible = visible_gpus(container, env, inventory.gpus) if runtime else None
    except LookupError as exc:
        return PluginOutcome("crash", str(exc))
    if visible is None:
        if fail_on_init:
            return PluginOutcome(
                "crash",
                "failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND "
                "(is the NVIDIA container runtime configured for this pod?)",
            )
        return PluginOutcome("running", NO_DEVICES)
    if not visible:
        return PluginOutcome("running", NO_DEVICES)
    return visible


def _registered(visible: tuple[SimGpu, ...], sharing: Sharing, *, image: str) -> PluginOutcome:
    """The outcome of a plugin that registered its devices (replicated per the sharing)."""
    try:
        base = base_devices(visible, sharing.mig_strategy, image)
    except ValueError as exc:
        return PluginOutcome("crash", str(exc))
    capacity: dict[str, int] = {}
    allocatable: dict[str, int] = {}
    devices: dict[str, tuple[str, ...]] = {}
    for resource, entries in base.items():
        replicas = sharing.replicas_of(resource)
        if len(entries) * replicas > MAX_COUNT:  # the config package accepts 2**63-1 replicas
            return PluginOutcome("crash", OUT_OF_MEMORY)
        name = f"{resource}.shared" if sharing.renamed and replicas > 1 else resource
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
        devices=devices,
        sharing=sharing,
    )


def advertised(
    template_spec: Mapping[str, Any],
    inventory: NodeInventory,
    configmaps: ConfigMapLookup,
    *,
    node_labels: Mapping[str, str] | None = None,
) -> PluginOutcome:
    """The plugin's outcome on one node for this pod template."""
    container = plugin_container(template_spec)
    labels = node_labels or {}
    sharing = _config(template_spec, container, configmaps, labels)
    if isinstance(sharing, PluginOutcome):
        return sharing
    visible = _visible(template_spec, container, inventory, fail_on_init=sharing.fail_on_init_error)
    if isinstance(visible, PluginOutcome):
        return visible
    image = str(container.get("image", ""))
    if not has_unified_memory_fix(image) and any(not g.memory_supported for g in visible):
        return PluginOutcome("crash", "error getting device memory: Not Supported")
    if sharing.strategy == "mps" and sharing.mig_strategy == "mixed":
        return PluginOutcome("crash", "using --mig-strategy=mixed is not supported with MPS")
    if sharing.strategy == "mps" and not _mps_daemon_runs(inventory, labels):
        # The MPS control daemon DaemonSet selects nvidia.com/mps.capable=true (written by
        # GFD from the same config); without it the plugin waits and registers nothing.
        return PluginOutcome(
            "running",
            "Failed to start plugin: error waiting for MPS daemon. Retrying in 30s",
            visible=tuple(g.index for g in visible),
            sharing=sharing,
        )
    return _registered(visible, sharing, image=image)


def _mps_daemon_runs(inventory: NodeInventory, labels: Mapping[str, str]) -> bool:
    """The MPS daemon runs where the node is labelled MPS-capable (GFD labels it itself)."""
    return labels.get("nvidia.com/mps.capable") == "true" or inventory.gfd
