"""The plugin config file's `sharing` block: time-slicing or MPS, replicas, renaming."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from app.simulator.plugin.outcome import GPU_RESOURCE


class PluginConfigError(ValueError):
    """The config file would make the plugin exit."""


@dataclass(frozen=True)
class Sharing:
    strategy: str
    replicas: int
    renamed: bool
    fail_requests_greater_than_one: bool


NO_SHARING = Sharing("none", 1, False, False)


def _normalise_name(name: str) -> str:
    return name if name.startswith("nvidia.com/") else f"nvidia.com/{name}"


def _sharing_block(text: str) -> tuple[str, Any]:
    """(strategy, its block) of the config file; block None when nothing is shared."""
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
    if sharing.get("mps") is not None:
        return "mps", sharing["mps"]
    if "timeSlicing" in sharing:
        return "time-slicing", sharing["timeSlicing"] or {}
    return "none", None


def _gpu_replicas(entries: Any) -> int:
    """The replicas of `nvidia.com/gpu` in a block's resources (1 when none names it)."""
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
    return replicas


def parse_sharing(text: str) -> Sharing:
    """Parse a plugin config file's sharing block; raise PluginConfigError when invalid."""
    strategy, block = _sharing_block(text)
    if block is None:
        return NO_SHARING
    if not isinstance(block, dict):
        raise PluginConfigError(f"unable to parse {strategy} config")
    replicas = _gpu_replicas(block.get("resources"))
    if replicas == 1:  # no entry names nvidia.com/gpu: replication has no effect
        strategy = "none"
    renamed = block.get("renameByDefault") is True and replicas > 1
    fail_gt_one = strategy == "mps" or block.get("failRequestsGreaterThanOne") is True
    return Sharing(strategy, replicas, renamed, fail_gt_one)
