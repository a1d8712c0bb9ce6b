"""What `kubectl logs` shows for a plugin pod: the lines the real plugin prints at start.

Its version, the config it loaded, then the devices it registered or the error it exits on,
in klog's header format.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from app.simulator.plugin.container import container_env, plugin_container
from app.simulator.plugin.outcome import PluginOutcome

PLUGIN_VERSION_FALLBACK = "unknown"


def _klog(moment: datetime, level: str, source: str, message: str) -> str:
    """One line in klog's header format (what the plugin's logger writes)."""
    stamp = moment.strftime("%m%d %H:%M:%S.%f")
    return f"{level}{stamp}       1 {source}] {message}\n"


def plugin_log(spec: Mapping[str, object], outcome: PluginOutcome, *, now: datetime) -> str:
    """The start-up lines of the plugin container for this outcome."""
    container = plugin_container(spec)
    image = str(container.get("image", ""))
    version = (
        image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else PLUGIN_VERSION_FALLBACK
    )
    env = container_env(container)
    lines = [_klog(now, "I", "main.go:235", f'"Starting NVIDIA Device Plugin" version="{version}"')]
    config_file = env.get("CONFIG_FILE")
    if config_file:
        lines.append(
            _klog(now, "I", "main.go:316", f'"Loading configuration" file="{config_file}"')
        )
    if outcome.state == "crash":
        lines.append(
            _klog(now, "E", "main.go:132", f'"error starting plugins" err="{outcome.message}"')
        )
        return "".join(lines)
    started = outcome.sharing
    sharing = (
        f"timeSlicing replicas={started.replicas} renameByDefault={str(started.renamed).lower()}"
        if started.strategy == "time-slicing"
        else "none"
    )
    lines.append(_klog(now, "I", "main.go:356", f'"Running with config" sharing="{sharing}"'))
    if not outcome.capacity:
        lines.append(_klog(now, "I", "main.go:370", outcome.message or "No devices found."))
        return "".join(lines)
    for resource, count in outcome.capacity.items():
        devices = len(outcome.visible)
        lines.append(
            _klog(
                now,
                "I",
                "server.go:195",
                f"Found {devices} devices for '{resource}' ({count} slots)",
            )
        )
        lines.append(
            _klog(
                now, "I", "server.go:146", f"Registered device plugin for '{resource}' with Kubelet"
            )
        )
    return "".join(lines)
