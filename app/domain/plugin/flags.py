"""The plugin's `flags:` block, its env vars and its start-up checks (validateFlags).

A flag comes from the container's env when the variable is present (urfave/cli counts an
empty value as set), else from the file, else the plugin's default. The checks are those of
cmd/nvidia-device-plugin/main.go: a value they refuse makes the plugin exit at start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.domain.plugin.gojson import (
    GoJsonError,
    go_bool,
    go_int,
    go_string,
    json_kind,
    last,
    merged_struct,
)
from app.domain.plugin.replicated import PluginConfigError
from app.domain.plugin.shape import ALLOCATION_POLICY, FLAGS, GFD_FLAGS, PLUGIN_FLAGS, Struct

MIG_STRATEGIES = ("none", "single", "mixed")
DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
DEVICE_ID_STRATEGIES = ("uuid", "index")
DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")
# flags.plugin.sharedDevicesAllocationPolicy exists from v0.20.0 (env
# SHARED_DEVICES_ALLOCATION_POLICY); v0.19 ignores the key. `spread` is on main only.
ALLOCATION_POLICIES = ("distributed", "packed")
DEFAULT_ALLOCATION_POLICY = "distributed"
ALLOCATION_POLICY_SINCE = (0, 20, 0)

_BOOL_FLAGS = ("gdrcopyEnabled", "gdsEnabled", "mofedEnabled", "useNodeFeatureAPI")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_DURATION = re.compile(
    r"^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)$"
)


@dataclass(frozen=True)
class Flags:
    """The flags that decide what the plugin advertises (and whether it starts)."""

    mig_strategy: str
    fail_on_init_error: bool
    mps_root: str
    allocation_policy: str


def read_flags(
    values: list[Any], env: Mapping[str, str], *, version: tuple[int, int, int] | None
) -> Flags:
    """The `flags:` values (each occurrence merges), env over file, then validateFlags."""
    try:
        fields = merged_struct(values, FLAGS)
        plugin = merged_struct(_pointer(fields.get("plugin")), _plugin_flags(version))
        _check_types(fields, plugin)
        _check_gfd(merged_struct(_pointer(fields.get("gfd")), GFD_FLAGS))
        mig = _string(env, "MIG_STRATEGY", last(fields, "migStrategy"), "none")
        fail_on_init = _bool(env, "FAIL_ON_INIT_ERROR", last(fields, "failOnInitError"), True)
        mps_root = _string(env, "MPS_ROOT", last(fields, "mpsRoot"), "")
        id_strategy = _string(env, "DEVICE_ID_STRATEGY", last(plugin, "deviceIDStrategy"), "uuid")
        discovery = _string(
            env, "DEVICE_DISCOVERY_STRATEGY", last(fields, "deviceDiscoveryStrategy"), "auto"
        )
        list_strategy = _list_strategy(env, last(plugin, "deviceListStrategy"))
        policy = DEFAULT_ALLOCATION_POLICY
        if version is not None and version >= ALLOCATION_POLICY_SINCE:
            policy = _string(
                env,
                "SHARED_DEVICES_ALLOCATION_POLICY",
                last(plugin, ALLOCATION_POLICY),
                DEFAULT_ALLOCATION_POLICY,
            )
    except GoJsonError as exc:
        raise PluginConfigError.of(exc) from exc
    for strategy in list_strategy:
        if strategy not in DEVICE_LIST_STRATEGIES:
            raise PluginConfigError("plugin.flag.device-list-strategy", value=strategy)
    if id_strategy not in DEVICE_ID_STRATEGIES:
        raise PluginConfigError("plugin.flag.device-id-strategy", value=id_strategy)
    if discovery not in DISCOVERY_STRATEGIES:
        raise PluginConfigError("plugin.flag.device-discovery-strategy", value=discovery)
    if policy not in ALLOCATION_POLICIES:
        raise PluginConfigError(
            "plugin.flag.allocation-policy", value=policy, accepted=" | ".join(ALLOCATION_POLICIES)
        )
    return Flags(mig, fail_on_init, mps_root, policy)


def check_mig_strategy(flags: Flags) -> None:
    """validateFlags checks the MIG strategy after the MPS rules."""
    if flags.mig_strategy not in MIG_STRATEGIES:
        raise PluginConfigError("plugin.flag.mig-strategy", value=flags.mig_strategy)


def _plugin_flags(version: tuple[int, int, int] | None) -> Struct:
    if version is not None and version >= ALLOCATION_POLICY_SINCE:
        return PLUGIN_FLAGS
    return PLUGIN_FLAGS.without(ALLOCATION_POLICY)


def _pointer(values: list[Any] | None) -> list[Any]:
    """A pointer-to-struct field: a null resets it, so only objects after the last null count."""
    out: list[Any] = []
    for value in values or []:
        out = [] if value is None else [*out, value]
    return out


def _check_types(fields: Mapping[str, list[Any]], plugin: Mapping[str, list[Any]]) -> None:
    """Every occurrence must decode into its Go type, even one a later key replaces."""
    for name in ("migStrategy", "mpsRoot", "nvidiaDriverRoot", "nvidiaDevRoot"):
        for value in fields.get(name, []):
            go_string(value, f"flags.{name}")
    for value in fields.get("deviceDiscoveryStrategy", []):
        go_string(value, "flags.deviceDiscoveryStrategy")
    for name in ("failOnInitError", *_BOOL_FLAGS):
        for value in fields.get(name, []):
            go_bool(value, f"flags.{name}")
    for value in plugin.get("passDeviceSpecs", []):
        go_bool(value, "flags.plugin.passDeviceSpecs")
    for name in ("deviceIDStrategy", "cdiAnnotationPrefix", "nvidiaCTKPath", "containerDriverRoot"):
        for value in plugin.get(name, []):
            go_string(value, f"flags.plugin.{name}")
    for value in plugin.get("deviceListStrategy", []):
        _list_value(value)


def _check_gfd(gfd: Mapping[str, list[Any]]) -> None:
    for name in ("oneshot", "noTimestamp"):
        for value in gfd.get(name, []):
            go_bool(value, f"flags.gfd.{name}")
    for name in ("outputFile", "machineTypeFile"):
        for value in gfd.get(name, []):
            go_string(value, f"flags.gfd.{name}")
    for value in gfd.get("sleepInterval", []):
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            continue
        if not isinstance(value, str):
            raise GoJsonError("plugin.flag.duration-type")
        if value != "infinite" and not _DURATION.match(value):
            raise GoJsonError("plugin.flag.duration", value=value)


def _list_value(value: Any) -> list[str] | None:
    """deviceListStrategyFlag.UnmarshalJSON: one string or a list of strings."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise GoJsonError("plugin.flag.device-list-type", kind=json_kind(value))


def _list_strategy(env: Mapping[str, str], value: Any) -> list[str]:
    if "DEVICE_LIST_STRATEGY" in env:
        return [part.strip() for part in env["DEVICE_LIST_STRATEGY"].split(",")]
    found = _list_value(value)
    return ["envvar"] if found is None else found


def _string(env: Mapping[str, str], env_name: str, value: Any, default: str) -> str:
    if env_name in env:
        return env[env_name]
    found = go_string(value, env_name)
    return default if found is None else found


def _bool(env: Mapping[str, str], env_name: str, value: Any, default: bool) -> bool:
    if env_name in env:
        text = env[env_name]
        if text == "":
            return False
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise PluginConfigError(
            "plugin.flag.env-bool",
            value=text,
            env=env_name,
            flag=env_name.lower().replace("_", "-"),
        )
    found = go_bool(value, env_name)
    return default if found is None else found


def imex_ids(values: list[Any]) -> list[int]:
    """imex.channelIDs: a list of ints; AssertChannelIDsValid allows [] and [0] only."""
    ids: list[int] = []
    for value in values:
        if value is None:
            continue
        if not isinstance(value, list):
            raise PluginConfigError("plugin.json.into", kind=json_kind(value), target="channelIDs")
        try:
            ids = [go_int(item, "channelIDs") or 0 for item in value]
        except GoJsonError as exc:
            raise PluginConfigError.of(exc) from exc
    if ids not in ([], [0]):
        raise PluginConfigError("plugin.imex.channel-ids", ids=str(ids))
    return ids
