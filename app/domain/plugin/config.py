"""The device plugin's config.yaml, parsed the way the plugin v0.15-v0.19 parses it.

The real plugin reads the file with non-strict YAML (unknown keys ignored, struct keys matched
case-insensitively) but its sharing blocks look up exact keys; a config it refuses makes it exit,
so `parse_plugin_config` raises `PluginConfigError` with the message the plugin would log.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from app.domain.snapshot import Mode

GPU_RESOURCE = "nvidia.com/gpu"
MIG_STRATEGIES = ("none", "single", "mixed")
# flags.plugin.sharedDevicesAllocationPolicy (v0.20.0; env SHARED_DEVICES_ALLOCATION_POLICY,
# flag --shared-devices-allocation-policy): which replicas of time-sliced or MIG devices the
# plugin prefers. `spread` exists only on the plugin's main branch, in no release yet.
ALLOCATION_POLICIES = ("distributed", "packed")
DEFAULT_ALLOCATION_POLICY = "distributed"
_PREFIX = "nvidia.com/"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_UUID_DEVICE = re.compile(r"^(GPU-|MIG-)[0-9A-Za-z-]+(/\d+/\d+)?$")
_MIG_INDEX = re.compile(r"^\d+(:\d+)?$")


class PluginConfigError(ValueError):
    """The plugin would refuse this config and exit (its pod crash-loops)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class SharingResource:
    """One entry of a sharing block, after the plugin's own overrides."""

    name: str
    replicas: int


@dataclass(frozen=True)
class PluginConfig:
    """What one config file (plus the container's env) makes the plugin advertise."""

    mode: Mode
    replicas: int
    resource: str
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    mig_strategy: str
    fail_on_init_error: bool
    sharing_resources: tuple[SharingResource, ...] = ()
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)
    allocation_policy: str = DEFAULT_ALLOCATION_POLICY


# Pod-template annotation carrying config_hash() of the config the pods should run.
CONFIG_HASH_ANNOTATION = "gpu-slots.io/config-hash"


def config_hash(text: str) -> str:
    """A short, stable hash of a config text (for a pod-template annotation)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def default_plugin_config(*, env: Mapping[str, str] | None = None) -> PluginConfig:
    """The plugin's settings with no config file: basic mode, flags from env."""
    return parse_plugin_config("", env=env)


def _sharing_blocks(
    sharing: dict[str, Any], warnings: list[str]
) -> tuple[_Replicated | None, _Replicated | None]:
    """The timeSlicing and mps blocks of `sharing` (None where absent)."""
    time_slicing = None
    if _ci_has(sharing, "timeSlicing"):
        time_slicing = _parse_replicated(_ci_get(sharing, "timeSlicing"), "timeSlicing", warnings)
    mps = None
    mps_value = _ci_get(sharing, "mps")
    if mps_value is not None:
        mps = _parse_replicated(mps_value, "mps", warnings)
    return time_slicing, mps


def _sharing_mode(
    time_slicing: _Replicated | None, mps: _Replicated | None
) -> tuple[Mode, _Replicated | None]:
    """MPS or time-slicing when its block replicates a resource, MPS first; else basic."""
    if mps is not None and any(r.replicas > 1 for r in mps.resources):
        return Mode.MPS, mps
    if time_slicing is not None and any(r.replicas > 1 for r in time_slicing.resources):
        return Mode.TIME_SLICING, time_slicing
    return Mode.BASIC, None


def parse_plugin_config(text: str, *, env: Mapping[str, str] | None = None) -> PluginConfig:
    """Parse config.yaml text like the plugin; env vars of its container beat the file's flags."""
    env = env or {}
    raw = _load_yaml(text)
    version = _ci_get(raw, "version")
    if version not in (None, "", "v1"):
        raise PluginConfigError(f"unknown version: {version}")
    flags = _as_object(_ci_get(raw, "flags"), "flags")
    _check_resource_patterns(_as_object(_ci_get(raw, "resources"), "resources"))
    _check_imex(_as_object(_ci_get(raw, "imex"), "imex"))
    sharing = _as_object(_ci_get(raw, "sharing"), "sharing")

    warnings: list[str] = []
    if _ci_get(raw, "resources"):
        warnings.append(
            "Customizing the 'resources' field is not yet supported in the config. Ignoring..."
        )
    time_slicing, mps = _sharing_blocks(sharing, warnings)
    mig_strategy = _flag_str(env, flags, env_name="MIG_STRATEGY", key="migStrategy") or "none"
    if mig_strategy not in MIG_STRATEGIES:
        raise PluginConfigError(f"unknown MIG strategy: {mig_strategy}")
    fail_on_init_error = _flag_bool(
        env, flags, env_name="FAIL_ON_INIT_ERROR", key="failOnInitError"
    )
    allocation_policy = allocation_policy_of(env, flags)
    mode, block = _sharing_mode(time_slicing, mps)
    if mode is Mode.MPS:
        if mig_strategy == "mixed":
            raise PluginConfigError("using --mig-strategy=mixed is not supported with MPS")
        if not (env.get("MPS_ROOT") or _ci_get(flags, "mpsRoot")):
            raise PluginConfigError("using MPS requires --mps-root to be specified")

    replicas, resource = 1, GPU_RESOURCE
    rename = fail_gt_one = False
    resources: tuple[SharingResource, ...] = ()
    if block is not None:
        rename = block.rename_by_default
        fail_gt_one = True if mode is Mode.MPS else block.fail_requests_greater_than_one
        resources = block.resources
        for entry in block.resources:
            if entry.name == GPU_RESOURCE:
                replicas = entry.replicas
                resource = f"{GPU_RESOURCE}.shared" if rename else GPU_RESOURCE
    return PluginConfig(
        mode=mode,
        replicas=replicas,
        resource=resource,
        rename_by_default=rename,
        fail_requests_greater_than_one=fail_gt_one,
        mig_strategy=mig_strategy,
        fail_on_init_error=fail_on_init_error,
        sharing_resources=resources,
        warnings=tuple(warnings),
        raw=raw,
        allocation_policy=allocation_policy,
    )


def allocation_policy_of(env: Mapping[str, str], flags: Mapping[str, Any]) -> str:
    """flags.plugin.sharedDevicesAllocationPolicy (env beats the file), checked like v0.20."""
    plugin = _as_object(_ci_get(flags, "plugin"), "flags.plugin")
    value = _flag_str(
        env,
        plugin,
        env_name="SHARED_DEVICES_ALLOCATION_POLICY",
        key="sharedDevicesAllocationPolicy",
    )
    value = value or DEFAULT_ALLOCATION_POLICY
    if value not in ALLOCATION_POLICIES:
        raise PluginConfigError(
            f"invalid --shared-devices-allocation-policy option: {value} "
            f"(v0.20 accepts {' | '.join(ALLOCATION_POLICIES)})"
        )
    return value


@dataclass(frozen=True)
class _Replicated:
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    resources: tuple[SharingResource, ...]


def _load_yaml(text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as exc:
        raise PluginConfigError(f"error converting YAML to JSON: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = "array" if isinstance(data, list) else type(data).__name__
        raise PluginConfigError(f"json: cannot unmarshal {kind} into Go value of type v1.Config")
    return {str(key): value for key, value in data.items()}


def _ci_has(obj: Mapping[str, Any], key: str) -> bool:
    return any(str(k).lower() == key.lower() for k in obj)


def _ci_get(obj: Mapping[str, Any], key: str) -> Any:
    """A struct field as Go's encoding/json finds it: case-insensitive, the last match wins."""
    found = None
    for name, value in obj.items():
        if str(name).lower() == key.lower():
            found = value
    return found


def _as_object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PluginConfigError(f"json: cannot unmarshal {_json_kind(value)} into {where}")
    return {str(key): item for key, item in value.items()}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _flag_str(env: Mapping[str, str], flags: Mapping[str, Any], *, env_name: str, key: str) -> str:
    if env_name in env:
        return env[env_name]
    value = _ci_get(flags, key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PluginConfigError(f"json: cannot unmarshal {_json_kind(value)} into flags.{key}")
    return value


def _flag_bool(
    env: Mapping[str, str], flags: Mapping[str, Any], *, env_name: str, key: str
) -> bool:
    if env_name in env:
        text = env[env_name].strip().lower()
        if text in ("1", "t", "true"):
            return True
        if text in ("0", "f", "false"):
            return False
        raise PluginConfigError(f'invalid value "{env[env_name]}" for flag {env_name}')
    value = _ci_get(flags, key)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise PluginConfigError(f"json: cannot unmarshal {_json_kind(value)} into flags.{key}")
    return value


def _parse_replicated(value: Any, block: str, warnings: list[str]) -> _Replicated:
    """A sharing block: exact keys only, as the plugin's hand-written UnmarshalJSON reads it."""
    obj = _as_object(value, f"sharing.{block}")
    rename = _exact_bool(obj, "renameByDefault")
    fail_gt_one = _exact_bool(obj, "failRequestsGreaterThanOne")
    entries = obj.get("resources")
    if not entries:
        raise PluginConfigError("no resources specified")
    if not isinstance(entries, list):
        raise PluginConfigError(
            f"json: cannot unmarshal {_json_kind(entries)} into []ReplicatedResource"
        )
    resources = tuple(_parse_entry(entry, block, warnings) for entry in entries)
    return _Replicated(rename, fail_gt_one, resources)


def _exact_bool(obj: Mapping[str, Any], key: str) -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise PluginConfigError(
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type bool"
        )
    return value


def _parse_entry(entry: Any, block: str, warnings: list[str]) -> SharingResource:
    if not isinstance(entry, dict):
        raise PluginConfigError(
            f"json: cannot unmarshal {_json_kind(entry)} into Go value of type "
            "map[string]json.RawMessage"
        )
    if "name" not in entry:
        raise PluginConfigError("no resource name specified")
    name = resource_name(entry["name"])
    if "replicas" not in entry:
        raise PluginConfigError("no replicas specified")
    replicas = entry["replicas"]
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise PluginConfigError(
            f"json: cannot unmarshal {_json_kind(replicas)} into Go value of type int"
        )
    if replicas < 2:
        raise PluginConfigError("number of replicas must be >= 2")
    if "rename" in entry:
        resource_name(entry["rename"])
        warnings.append(
            f"Setting the 'rename' field in sharing.{block}.resources is not yet supported "
            "in the config. Ignoring..."
        )
    if "devices" in entry:
        _check_devices(entry["devices"])
        if entry["devices"] != "all":
            warnings.append(
                f"Customizing the 'devices' field in sharing.{block}.resources is not yet "
                "supported in the config. Ignoring..."
            )
    return SharingResource(name=name, replicas=replicas)


def resource_name(value: Any) -> str:
    """Normalise a resource name like the plugin: prefix nvidia.com/, check DNS-subdomain rules."""
    if not isinstance(value, str):
        raise PluginConfigError(
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type string"
        )
    name = value if value.startswith(_PREFIX) else _PREFIX + value
    suffix = name[len(_PREFIX) :]
    labels = suffix.split(".")
    valid = len(name) <= 63 and bool(suffix) and all(_DNS_LABEL.match(label) for label in labels)
    if not valid:
        raise PluginConfigError(f"incorrect format for resource name '{value}'")
    return name


def _check_devices(value: Any) -> None:
    if value == "all":
        return
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise PluginConfigError("devices count must be > 0")
        return
    if isinstance(value, list):
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool):
                continue
            if isinstance(item, str) and (_MIG_INDEX.match(item) or _UUID_DEVICE.match(item)):
                continue
            raise PluginConfigError(f"unsupported device reference: {item}")
        return
    raise PluginConfigError(f"unsupported type for devices spec: {value}")


def _check_resource_patterns(resources: Mapping[str, Any]) -> None:
    for kind in ("gpus", "mig"):
        entries = _ci_get(resources, kind) or []
        if not isinstance(entries, list):
            raise PluginConfigError(f"json: cannot unmarshal {_json_kind(entries)} into {kind}")
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("pattern") or not entry.get("name"):
                raise PluginConfigError(f"resources.{kind}: both pattern and name are required")


def _check_imex(imex: Mapping[str, Any]) -> None:
    channels = _ci_get(imex, "channelIDs")
    if channels not in (None, [], [0]):
        raise PluginConfigError(f"invalid IMEX channel IDs: {channels}")
