"""The device-plugin DaemonSet, read into the settings the plugin actually runs with.

Everything here comes from the manifest alone (camelCase JSON dict): image and version, the
plugin container's env and flags, how CONFIG_FILE reaches a ConfigMap key (directly through a
volume mount, or per node through the config-manager sidecar), and who manages the DaemonSet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.cluster import Manifest
from app.domain.coded import Coded

NODE_CONFIG_LABEL = "nvidia.com/device-plugin.config"
UNIFIED_MEMORY_FIX = (0, 17, 4)
PLATFORM_MINIMUM = (0, 18, 2)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
_PLUGIN_CONTAINERS = ("nvidia-device-plugin", "nvidia-device-plugin-ctr")
# Flags the plugin also reads from argv; argv beats env (urfave/cli).
_ARG_ENV = {
    "--config-file": "CONFIG_FILE",
    "--mig-strategy": "MIG_STRATEGY",
    "--fail-on-init-error": "FAIL_ON_INIT_ERROR",
    "--mps-root": "MPS_ROOT",
}

Version = tuple[int, int, int]


@dataclass(frozen=True)
class ConfigMapMount:
    """A ConfigMap volume mounted into a container."""

    configmap: str
    mount_path: str
    sub_path: str | None = None
    items: Mapping[str, str] | None = None  # path in the volume -> key
    optional: bool = False


@dataclass(frozen=True)
class StaticConfigRef:
    """CONFIG_FILE resolves to one key of one ConfigMap, the same on every node."""

    configmap: str
    key: str


@dataclass(frozen=True)
class ConfigManagerRef:
    """CONFIG_FILE is written per node by config-manager from a node label."""

    configmap: str
    node_label: str = NODE_CONFIG_LABEL
    default_config: str = ""
    fallback_strategies: tuple[str, ...] = ("named", "single")


@dataclass(frozen=True)
class UnresolvedConfigRef:
    """CONFIG_FILE names a path no ConfigMap provides (the plugin cannot open it)."""

    path: str
    reason: Coded  # `plugin.path.*`: why the path does not lead to a ConfigMap key


ConfigRef = StaticConfigRef | ConfigManagerRef | UnresolvedConfigRef


@dataclass(frozen=True)
class PluginSpec:
    """The plugin DaemonSet's effective settings."""

    name: str
    namespace: str
    container: str
    image: str | None
    version: Version | None
    env: Mapping[str, str]
    privileged: bool
    runtime_class_name: str | None
    config_file: str | None
    config_mounts: tuple[ConfigMapMount, ...]
    config_ref: ConfigRef | None
    operator_managed: bool
    ready: int
    desired: int
    selector: Mapping[str, str] = field(default_factory=dict)
    template_annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    managed_by: str = "other"  # gpu-operator | helm | other

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def version_text(self) -> str | None:
        return None if self.version is None else "v{}.{}.{}".format(*self.version)

    @property
    def visible_devices(self) -> str | None:
        return self.env.get("NVIDIA_VISIBLE_DEVICES")


def parse_version(image: str | None) -> Version | None:
    """The plugin version from an image reference: v0.18.2, v0.17.4-ubi9, 0.15.0-ubi8."""
    if not image:
        return None
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = _VERSION.match(last.rsplit(":", 1)[1])
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


def read_plugin_spec(daemonset: Manifest) -> PluginSpec:
    """Read a DaemonSet manifest into the plugin's effective settings."""
    meta = daemonset.get("metadata") or {}
    spec = daemonset.get("spec") or {}
    template = spec.get("template") or {}
    pod_spec = template.get("spec") or {}
    containers: list[Manifest] = list(pod_spec.get("containers") or [])
    init_containers: list[Manifest] = list(pod_spec.get("initContainers") or [])
    container = _plugin_container(containers)
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    env = container_env(container)
    env.update(_arg_flags(container))
    image = container.get("image")
    status = daemonset.get("status") or {}
    mounts = _configmap_mounts(container, volumes)
    config_file = env.get("CONFIG_FILE") or None
    config_ref = None
    if config_file:
        config_ref = _resolve_config(config_file, container, containers + init_containers, volumes)
    return PluginSpec(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        container=str(container.get("name", "")),
        image=image,
        version=parse_version(image),
        env=env,
        privileged=bool((container.get("securityContext") or {}).get("privileged")),
        runtime_class_name=pod_spec.get("runtimeClassName") or None,
        config_file=config_file,
        config_mounts=mounts,
        config_ref=config_ref,
        operator_managed=is_operator_managed(daemonset),
        ready=int(status.get("numberReady") or 0),
        desired=int(status.get("desiredNumberScheduled") or 0),
        selector=dict((spec.get("selector") or {}).get("matchLabels") or {}),
        template_annotations=dict((template.get("metadata") or {}).get("annotations") or {}),
        node_selector={str(k): str(v) for k, v in (pod_spec.get("nodeSelector") or {}).items()},
        managed_by=_managed_by(daemonset),
    )


def _managed_by(daemonset: Manifest) -> str:
    if is_operator_managed(daemonset):
        return "gpu-operator"
    labels = (daemonset.get("metadata") or {}).get("labels") or {}
    return "helm" if labels.get("app.kubernetes.io/managed-by") == "Helm" else "other"


_NOT_THE_PLUGIN = ("gpu-feature-discovery", "mps-control-daemon", "config-manager")


def is_plugin_daemonset(daemonset: Manifest) -> bool:
    """A DaemonSet running the device plugin itself (not GFD or the MPS daemon of its image)."""
    meta = daemonset.get("metadata") or {}
    if any(word in str(meta.get("name", "")) for word in _NOT_THE_PLUGIN[:2]):
        return False
    pod_spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in pod_spec.get("containers") or []:
        words = " ".join(map(str, (container.get("command") or []) + (container.get("args") or [])))
        if any(word in words for word in _NOT_THE_PLUGIN):
            continue
        if container.get("name") in _PLUGIN_CONTAINERS or "k8s-device-plugin" in str(
            container.get("image", "")
        ):
            return True
    return False


def is_operator_managed(daemonset: Manifest) -> bool:
    """True when the GPU Operator owns the DaemonSet (it would revert or re-render edits)."""
    meta = daemonset.get("metadata") or {}
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "ClusterPolicy" and str(owner.get("apiVersion", "")).startswith(
            "nvidia.com/"
        ):
            return True
    # The operator labels the pod template, not always the DaemonSet itself (v26.7 assets).
    template = ((daemonset.get("spec") or {}).get("template") or {}).get("metadata") or {}
    for labels in (meta.get("labels") or {}, template.get("labels") or {}):
        if labels.get("app.kubernetes.io/managed-by") == "gpu-operator":
            return True
        if str(labels.get("helm.sh/chart", "")).startswith("gpu-operator"):
            return True
    return False


def container_env(container: Mapping[str, Any]) -> dict[str, str]:
    """Literal env values of a container (valueFrom entries are skipped; the last one wins)."""
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "name" in item and "valueFrom" not in item:
            env[str(item["name"])] = str(item.get("value", ""))
    return env


def _plugin_container(containers: Sequence[Manifest]) -> Manifest:
    for wanted in _PLUGIN_CONTAINERS:
        for container in containers:
            if container.get("name") == wanted:
                return container
    for container in containers:
        if "device-plugin" in str(container.get("image", "")) and not _is_config_manager(container):
            return container
    return containers[0] if containers else {}


def _is_config_manager(container: Mapping[str, Any]) -> bool:
    command = " ".join(map(str, (container.get("command") or []) + (container.get("args") or [])))
    return "config-manager" in command or "CONFIG_FILE_DST" in container_env(container)


def _arg_flags(container: Mapping[str, Any]) -> dict[str, str]:
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    found: dict[str, str] = {}
    for position, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag in _ARG_ENV:
            if not value and position + 1 < len(words) and "=" not in word:
                value = words[position + 1]
            found[_ARG_ENV[flag]] = value
    return found


def _configmap_mounts(
    container: Mapping[str, Any], volumes: Mapping[Any, Manifest]
) -> tuple[ConfigMapMount, ...]:
    mounts: list[ConfigMapMount] = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name")) or {}
        source = volume.get("configMap")
        if source is None:
            continue
        items = source.get("items")
        mounts.append(
            ConfigMapMount(
                configmap=str(source.get("name", "")),
                mount_path=str(mount.get("mountPath", "")).rstrip("/") or "/",
                sub_path=mount.get("subPath") or None,
                items={str(i["path"]): str(i["key"]) for i in items} if items else None,
                optional=bool(source.get("optional")),
            )
        )
    return tuple(mounts)


def _resolve_config(
    path: str,
    container: Mapping[str, Any],
    all_containers: Sequence[Manifest],
    volumes: Mapping[Any, Manifest],
) -> ConfigRef:
    mount, rest = _mount_for(path, container)
    if mount is None:
        return UnresolvedConfigRef(path, Coded("plugin.path.no-volume"))
    volume = volumes.get(mount.get("name")) or {}
    source = volume.get("configMap")
    if source is not None:
        items = {str(i["path"]): str(i["key"]) for i in source.get("items") or []}
        sub_path = mount.get("subPath")
        relative = f"{sub_path}/{rest}".strip("/") if sub_path else rest
        if not relative:
            return UnresolvedConfigRef(path, Coded("plugin.path.directory"))
        key = items.get(relative) if items else relative
        if key is None:
            return UnresolvedConfigRef(path, Coded("plugin.path.not-projected", file=relative))
        return StaticConfigRef(configmap=str(source.get("name", "")), key=key)
    for other in all_containers:
        env = container_env(other)
        if _is_config_manager(other) and env.get("CONFIG_FILE_DST") == path:
            srcdir = env.get("CONFIG_FILE_SRCDIR", "/available-configs")
            src_mount, _ = _mount_for(srcdir + "/x", other)
            src_volume = volumes.get((src_mount or {}).get("name")) or {}
            configmap = (src_volume.get("configMap") or {}).get("name")
            if configmap:
                fallback = env.get("FALLBACK_STRATEGIES", "named,single")
                return ConfigManagerRef(
                    configmap=str(configmap),
                    node_label=env.get("NODE_LABEL", NODE_CONFIG_LABEL),
                    default_config=env.get("DEFAULT_CONFIG", ""),
                    fallback_strategies=tuple(s for s in fallback.split(",") if s),
                )
    return UnresolvedConfigRef(path, Coded("plugin.path.not-configmap"))


def _mount_for(path: str, container: Mapping[str, Any]) -> tuple[Manifest | None, str]:
    best: Manifest | None = None
    best_len = -1
    for mount in container.get("volumeMounts") or []:
        mount_path = str(mount.get("mountPath", "")).rstrip("/")
        if (path == mount_path or path.startswith(mount_path + "/")) and len(mount_path) > best_len:
            best, best_len = mount, len(mount_path)
    if best is None:
        return None, ""
    return best, path[best_len:].strip("/")
