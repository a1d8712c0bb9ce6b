"""What the plugin container sees: its env, the GPUs the runtime gives it, its mounted files."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from app.simulator.node.inventory import SimGpu

ConfigMapLookup = Callable[[str], Mapping[str, Any] | None]
_VERSION = re.compile(r":v?(\d+)\.(\d+)\.(\d+)")


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


def image_version(image: str) -> tuple[int, int, int] | None:
    """The plugin image's `vX.Y.Z` tag as numbers; None for a tag that is not one."""
    match = _VERSION.search(image)
    if not match:
        return None
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def has_unified_memory_fix(image: str) -> bool:
    """v0.17.4+ in the 0.17 line, v0.18.0+; an unparsable tag counts as fixed."""
    version = image_version(image)
    if version is None:
        return True
    if version[:2] == (0, 17):
        return version[2] >= 4
    return version >= (0, 18, 0)


def visible_gpus(
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


def _mounted_files(
    mount_path: str, mount: Mapping[str, Any], source: Mapping[str, Any], data: Mapping[str, str]
) -> dict[str, str | None]:
    """Path -> content of what one ConfigMap volume mount puts in the container."""
    if mount.get("subPath"):
        return {mount_path: data.get(str(mount["subPath"]))}
    if source.get("items"):
        return {
            f"{mount_path}/{item.get('path')}": data.get(str(item.get("key")))
            for item in source["items"]
        }
    return {f"{mount_path}/{key}": value for key, value in data.items()}


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
        content = _mounted_files(mount_path, mount, source, data).get(path)
        if content is not None:
            return content, None
    return None, None
