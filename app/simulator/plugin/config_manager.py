"""config-manager's per-node config, as NVIDIA's Helm chart and the GPU Operator run it.

config-manager (an init container and a sidecar) links `CONFIG_FILE_DST` to one key of the
ConfigMap mounted at `CONFIG_FILE_SRCDIR`: the node label `NODE_LABEL` names it; unset,
`DEFAULT_CONFIG`; else the `FALLBACK_STRATEGIES` in order (`named`: a key `default`;
`single`: the only key; `empty`: no config). An unknown key is an error: the init
container fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.simulator.plugin.container import ConfigMapLookup, container_env


class ConfigManagerError(ValueError):
    """config-manager cannot pick a config: its container exits with this message."""


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
        env = container_env(container)
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
