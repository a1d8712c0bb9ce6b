"""More of the device plugin's emulation: config-manager's per-node config, MIG strategies.

- config-manager (an init container and a sidecar in NVIDIA's Helm chart and the GPU
  Operator) links `CONFIG_FILE_DST` to one key of the ConfigMap mounted at
  `CONFIG_FILE_SRCDIR`: the node label `NODE_LABEL` names it; unset, `DEFAULT_CONFIG`;
  else the `FALLBACK_STRATEGIES` in order (`named`: a key `default`; `single`: the only
  key; `empty`: no config). An unknown key is an error: the init container fails.
- MIG (migStrategy from `MIG_STRATEGY`, else `flags.migStrategy`, else none): `none`
  counts MIG-enabled GPUs as whole GPUs; `single` advertises every MIG device as
  `nvidia.com/gpu` (all GPUs MIG-enabled with one profile, else the plugin exits);
  `mixed` advertises `nvidia.com/gpu` for GPUs with MIG off and one
  `nvidia.com/mig-<profile>` per MIG device (v0.20+ keeps `+me`-style suffixes, `+` as
  `.`; earlier versions fold a suffixed profile into its base profile's name).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from app.simulator.node.inventory import SimGpu

ConfigMapLookup = Callable[[str], Mapping[str, Any] | None]
_BASE_PROFILE = re.compile(r"(\d+g\.\d+gb)")
_VERSION = re.compile(r":v?(\d+)\.(\d+)\.(\d+)")


class ConfigManagerError(ValueError):
    """config-manager cannot pick a config: its container exits with this message."""


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value", ""))
        for e in container.get("env") or []
        if isinstance(e, Mapping) and "value" in e
    }


def config_manager_file(
    template_spec: Mapping[str, Any],
    path: str,
    configmaps: ConfigMapLookup,
    node_labels: Mapping[str, str],
) -> tuple[bool, str | None]:
    """(handled, content) for `path` when a config-manager container writes it.

    `handled` is False when no config-manager writes this path; content None means the
    `empty` fallback (no config file, built-in defaults).
    """
    containers = list(template_spec.get("initContainers") or []) + list(
        template_spec.get("containers") or []
    )
    volumes = {v.get("name"): v for v in template_spec.get("volumes") or []}
    for container in containers:
        env = _env(container)
        if env.get("CONFIG_FILE_DST") != path:
            continue
        srcdir = env.get("CONFIG_FILE_SRCDIR", "/available-configs").rstrip("/")
        source = None
        for mount in container.get("volumeMounts") or []:
            if str(mount.get("mountPath", "")).rstrip("/") == srcdir:
                source = (volumes.get(mount.get("name")) or {}).get("configMap")
        if not isinstance(source, Mapping):
            raise ConfigManagerError(f"no ConfigMap mounted at {srcdir}")
        configmap = configmaps(str(source.get("name", "")))
        if configmap is None:
            raise ConfigManagerError(f'configmap "{source.get("name")}" not found')
        data = {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}
        return True, _pick(data, env, node_labels)
    return False, None


def _pick(data: Mapping[str, str], env: Mapping[str, str], labels: Mapping[str, str]) -> str | None:
    label = labels.get(env.get("NODE_LABEL", "nvidia.com/device-plugin.config"))
    if label:
        if label not in data:
            raise ConfigManagerError(f"specified config {label} does not exist")
        return data[label]
    default = env.get("DEFAULT_CONFIG", "")
    if default:
        if default not in data:
            raise ConfigManagerError(f"specified config {default} does not exist")
        return data[default]
    for strategy in env.get("FALLBACK_STRATEGIES", "named,single").split(","):
        if strategy == "named" and "default" in data:
            return data["default"]
        if strategy == "single" and len(data) == 1:
            return next(iter(data.values()))
        if strategy == "empty":
            return None
    raise ConfigManagerError("unable to select a default configuration")


def mig_strategy(env: Mapping[str, str], config_text: str | None) -> str:
    """MIG_STRATEGY beats flags.migStrategy in the file, which beats `none`."""
    if env.get("MIG_STRATEGY"):
        return env["MIG_STRATEGY"]
    try:
        config = yaml.safe_load(config_text) if config_text else None
    except yaml.YAMLError:
        return "none"
    flags = config.get("flags") if isinstance(config, dict) else None
    value = flags.get("migStrategy") if isinstance(flags, dict) else None
    return str(value) if value else "none"


def _anchored(image: str) -> bool:
    match = _VERSION.search(image)
    return match is not None and tuple(int(g) for g in match.groups()) >= (0, 20, 0)


def mig_resource(profile: str, image: str) -> str | None:
    if _anchored(image):
        return "nvidia.com/mig-" + profile.replace("+", ".")
    match = _BASE_PROFILE.search(profile)
    return "nvidia.com/mig-" + match[1] if match else None


def base_devices(
    visible: tuple[SimGpu, ...], strategy: str, image: str
) -> dict[str, list[tuple[SimGpu, str]]]:
    """Resource name -> (GPU, device id) of every device the plugin would serve, unreplicated.

    Raises ValueError with the plugin's message for a layout the strategy refuses.
    """
    devices: dict[str, list[tuple[SimGpu, str]]] = {}
    mig = [g for g in visible if g.mig_enabled]
    if strategy not in ("none", "single", "mixed"):
        raise ValueError(f"unknown MIG strategy: {strategy}")
    if strategy == "none" or not mig:
        devices["nvidia.com/gpu"] = [(g, g.uuid) for g in visible]
        return devices
    if strategy == "single":
        if len(mig) != len(visible):
            raise ValueError(
                "all devices on the node must be configured with the same migEnabled value"
            )
        if len({m.profile for g in mig for m in g.mig_devices}) > 1:
            raise ValueError("more than one MIG device type present on node")
        devices["nvidia.com/gpu"] = [(g, m.uuid) for g in mig for m in g.mig_devices]
        return devices
    whole = [(g, g.uuid) for g in visible if not g.mig_enabled]
    if whole:
        devices["nvidia.com/gpu"] = whole
    for gpu in mig:
        for device in gpu.mig_devices:
            name = mig_resource(device.profile, image)
            if name is None:
                raise ValueError(f"MIG profile {device.profile} matches no resource pattern")
            devices.setdefault(name, []).append((gpu, device.uuid))
    return devices
