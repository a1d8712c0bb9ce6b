"""The device plugin's DaemonSet GPU Slots reads and changes: one namespace and name.

Settings hands it out (GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAME and _NAMESPACE); the engine,
the cache and the writers all take this one value instead of two loose strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_NAME = "nvidia-device-plugin-daemonset"
DEFAULT_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class PluginTarget:
    """The configured plugin DaemonSet: where it runs and what it is called."""

    namespace: str = DEFAULT_NAMESPACE
    name: str = DEFAULT_NAME

    @property
    def ref(self) -> str:
        """The "namespace/name" reference, as messages and evidence name it."""
        return f"{self.namespace}/{self.name}"

    def matches(self, manifest: dict[str, Any]) -> bool:
        """Whether `manifest` is this DaemonSet (an object without a namespace counts)."""
        meta = manifest.get("metadata") or {}
        return bool(
            meta.get("name") == self.name and meta.get("namespace") in (None, self.namespace)
        )
