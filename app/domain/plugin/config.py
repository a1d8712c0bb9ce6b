"""The device plugin's config.yaml, parsed the way the plugin v0.15-v0.19 parses it.

The real plugin reads the file with non-strict YAML (unknown keys ignored, struct keys matched
case-insensitively) but its sharing blocks look up exact keys; a config it refuses makes it exit,
so `parse_plugin_config` raises `PluginConfigError` with the code (and params) of the message
the plugin would log; the web layer words it, in English as the plugin logs it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from app.domain.bounds import READ_ERRORS, cut
from app.domain.coded import Coded
from app.domain.goyaml import GoYamlError, load_first_document
from app.domain.plugin.flags import (
    ALLOCATION_POLICIES,
    DEFAULT_ALLOCATION_POLICY,
    MIG_STRATEGIES,
    check_mig_strategy,
    imex_ids,
    read_flags,
)
from app.domain.plugin.gojson import (
    GoJsonError,
    check_json_safe,
    go_string,
    json_kind,
    merged_struct,
    struct_fields,
)
from app.domain.plugin.replicated import (
    PluginConfigError,
    Replicated,
    SharingResource,
    parse_replicated,
    resource_name,
)
from app.domain.plugin.shape import (
    CONFIG,
    CONFIG_VERSION,
    GPU_RESOURCE,
    IMEX,
    RESOURCE_LISTS,
    SHARING,
)
from app.domain.snapshot import Mode

__all__ = [
    "ALLOCATION_POLICIES",
    "CONFIG_HASH_ANNOTATION",
    "DEFAULT_ALLOCATION_POLICY",
    "GPU_RESOURCE",
    "MIG_STRATEGIES",
    "PluginConfig",
    "PluginConfigError",
    "SharingResource",
    "config_hash",
    "default_plugin_config",
    "parse_plugin_config",
    "resource_name",
]

Version = tuple[int, int, int]
# The rules of this release are the default when the image's version is unknown: the newest
# the Go module proxy serves, and the one the differential tier runs.
DEFAULT_RULES_VERSION: Version = (0, 19, 3)
MPS_FAIL_REQUESTS_HONOURED_SINCE: Version = (0, 20, 0)


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
    warnings: tuple[Coded, ...] = ()
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


def parse_plugin_config(
    text: str, *, env: Mapping[str, str] | None = None, version: Version | None = None
) -> PluginConfig:
    """Parse config.yaml text like the plugin of `version`; its container's env beats the file.

    Raises PluginConfigError with the plugin's reason when the plugin would refuse the config,
    and for any other failure of the reader on a hostile text (its error named, cut short).
    Parsed once per (text, env, version), refusals too: a ConfigMap's text is read again only
    when it changes, so a hostile text costs one parse per version, not one per build.
    """
    key = tuple(sorted((env or {}).items()))
    outcome = _parse_cached(text, key, version or DEFAULT_RULES_VERSION)
    if isinstance(outcome, Coded):
        raise PluginConfigError(outcome.code, **outcome.params)
    return outcome


@lru_cache(maxsize=256)
def _parse_cached(
    text: str, env_items: tuple[tuple[str, str], ...], version: Version
) -> PluginConfig | Coded:
    """The config, or the reason the plugin (or our bounded reader) refuses the text."""
    try:
        return _parse(text, dict(env_items), version)
    except PluginConfigError as exc:
        return exc.message
    except READ_ERRORS as exc:
        return Coded("plugin.unreadable", error=f"{type(exc).__name__}: {cut(str(exc))}")


def _parse(text: str, env: dict[str, str], version: Version) -> PluginConfig:
    raw = _load(text)
    try:
        fields = struct_fields(raw, CONFIG)
        versions = [
            go_string(value, "version", from_yaml_scalar=True)
            for value in fields.get("version", [])
        ]
        _check_resources(fields.get("resources", []))
        sharing = merged_struct(fields.get("sharing", []), SHARING)
    except GoJsonError as exc:
        raise PluginConfigError.of(exc) from exc
    time_slicing = _last_block(sharing.get("timeSlicing", []), "timeSlicing", pointer=False)
    mps = _last_block(sharing.get("mps", []), "mps", pointer=True)
    written = versions[-1] if versions else None
    if written not in (None, "", CONFIG_VERSION):
        raise PluginConfigError("plugin.version", version=written)
    flags = read_flags(fields.get("flags", []), env, version=version)
    imex = merged_struct(fields.get("imex", []), IMEX)
    mode, block = _sharing_mode(time_slicing, mps)
    if mode is Mode.MPS:
        if flags.mig_strategy == "mixed":
            raise PluginConfigError("plugin.mps.mixed-mig")
        if not flags.mps_root:
            raise PluginConfigError("plugin.mps.no-root")
    check_mig_strategy(flags)
    imex_ids(imex.get("channelIDs", []))
    return _config(raw, mode, block, flags=flags, version=version, has_mps=mps is not None)


def _config(
    raw: dict[str, Any],
    mode: Mode,
    block: Replicated | None,
    *,
    flags: Any,
    version: Version,
    has_mps: bool,
) -> PluginConfig:
    warnings = _warnings(raw, block, mode)
    resources = _union(block.resources) if block is not None else ()
    replicas = next((r.replicas for r in resources if r.name == GPU_RESOURCE), 1)
    rename = block.rename_by_default if block is not None else False
    fail_gt_one = block.fail_requests_greater_than_one if block is not None else False
    if has_mps and mode is Mode.MPS and block is not None:
        honoured = version >= MPS_FAIL_REQUESTS_HONOURED_SINCE and block.fail_requests_set
        fail_gt_one = fail_gt_one if honoured else True
    return PluginConfig(
        mode=mode,
        replicas=replicas if block is not None else 1,
        resource=f"{GPU_RESOURCE}.shared" if rename and replicas > 1 else GPU_RESOURCE,
        rename_by_default=rename,
        fail_requests_greater_than_one=fail_gt_one,
        mig_strategy=flags.mig_strategy,
        fail_on_init_error=flags.fail_on_init_error,
        sharing_resources=resources,
        warnings=warnings,
        raw=raw,
        allocation_policy=flags.allocation_policy,
    )


def _union(entries: tuple[SharingResource, ...]) -> tuple[SharingResource, ...]:
    """Entries naming one resource twice: the plugin's replica IDs are a union, the largest wins."""
    largest: dict[str, int] = {}
    for entry in entries:
        largest[entry.name] = max(largest.get(entry.name, 0), entry.replicas)
    return tuple(SharingResource(name, replicas) for name, replicas in largest.items())


def _warnings(raw: dict[str, Any], block: Replicated | None, mode: Mode) -> tuple[Coded, ...]:
    """What the plugin logs and ignores (its own warnings, worded by the web layer)."""
    found: list[Coded] = []
    resources = struct_fields(raw, CONFIG).get("resources", [])
    if any(_has_entries(value) for value in resources):
        found.append(Coded("plugin.warning.resources-ignored"))
    name = "mps" if mode is Mode.MPS else "timeSlicing"
    if block is not None and block.renames_ignored:
        found.append(Coded("plugin.warning.rename-ignored", block=name))
    if block is not None and block.devices_ignored:
        found.append(Coded("plugin.warning.devices-ignored", block=name))
    return tuple(found)


def _has_entries(value: Any) -> bool:
    fields = struct_fields(value, RESOURCE_LISTS) if isinstance(value, dict) else {}
    return any(isinstance(item, list) and item for items in fields.values() for item in items)


def _load(text: str) -> dict[Any, Any]:
    try:
        data = load_first_document(text)
        check_json_safe(data)
    except (GoYamlError, GoJsonError) as exc:
        raise PluginConfigError.of(exc) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PluginConfigError(
            "plugin.json.value-type", kind=json_kind(data).split()[0], type=CONFIG.go_type
        )
    return data


def _last_block(values: list[Any], name: str, *, pointer: bool) -> Replicated | None:
    """Each occurrence is parsed in turn (any may fail); the last one stays."""
    block: Replicated | None = None
    for value in values:
        if value is None and pointer:
            block = None
            continue
        block = parse_replicated(value, name)
    return block


def _sharing_mode(
    time_slicing: Replicated | None, mps: Replicated | None
) -> tuple[Mode, Replicated | None]:
    """SharingStrategy(): MPS when its block replicates, else time-slicing, else none."""
    if mps is not None and mps.replicated:
        return Mode.MPS, mps
    if time_slicing is not None and time_slicing.replicated:
        return Mode.TIME_SLICING, time_slicing
    return Mode.BASIC, None


def _check_resources(values: list[Any]) -> None:
    """resources.gpus / resources.mig: Resource.UnmarshalJSON needs pattern and a valid name."""
    fields = merged_struct(values, RESOURCE_LISTS)
    for kind, lists in fields.items():
        for entries in lists:
            if entries is None:
                continue
            if not isinstance(entries, list):
                raise GoJsonError("plugin.json.into", kind=json_kind(entries), target=kind)
            for entry in entries:
                _check_resource(entry)


def _check_resource(entry: Any) -> None:
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        raise GoJsonError("plugin.json.into", kind=json_kind(entry), target="v1.Resource")
    keys = {str(k): v for k, v in entry.items()}
    if "pattern" not in keys:
        raise PluginConfigError("plugin.resources.no-pattern")
    if "name" not in keys:
        raise PluginConfigError("plugin.resources.no-name")
    if keys["pattern"] is not None and not isinstance(keys["pattern"], str):
        raise GoJsonError("plugin.json.into", kind=json_kind(keys["pattern"]), target="pattern")
    resource_name("" if keys["name"] is None else keys["name"])


def allocation_policy_of(env: Mapping[str, str], flags: Mapping[str, Any]) -> str:
    """flags.plugin.sharedDevicesAllocationPolicy of a v0.20+ plugin (env beats the file).

    Kept for callers that hold a parsed `flags:` mapping; raises PluginConfigError as the
    plugin would for a value it refuses.
    """
    return read_flags(
        [dict(flags)], env, version=MPS_FAIL_REQUESTS_HONOURED_SINCE
    ).allocation_policy
