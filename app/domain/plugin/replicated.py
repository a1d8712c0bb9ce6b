"""The plugin's sharing blocks (api/config/v1 replicas.go and resources.go, v0.15-v0.20).

These types have hand-written UnmarshalJSON methods that look keys up exactly (`resources`,
`name`, `replicas`, `devices`, `rename`, `renameByDefault`, `failRequestsGreaterThanOne`, named
in `shape`): a key in another case is ignored. Every failure here makes the plugin exit at start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.domain.coded import CodedError
from app.domain.plugin.gojson import GoJsonError, check_json_safe, go_int, json_kind, key_text
from app.domain.plugin.shape import (
    DEVICES,
    FAIL_REQUESTS,
    NAME,
    RENAME,
    RENAME_BY_DEFAULT,
    REPLICAS,
    RESOURCES,
)

RESOURCE_PREFIX = "nvidia.com/"
MAX_RESOURCE_NAME = 63
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_RAW_MAP = "map[string]json.RawMessage"


class PluginConfigError(CodedError):
    """The plugin would refuse this config and exit (its pod crash-loops); `plugin.*` codes."""

    @classmethod
    def of(cls, error: CodedError) -> PluginConfigError:
        """The same code and params, as the plugin's refusal of the whole config."""
        return cls(error.code, **error.params)


@dataclass(frozen=True)
class SharingResource:
    """One entry of a sharing block, after the plugin's own overrides."""

    name: str
    replicas: int


@dataclass(frozen=True)
class Replicated:
    """A timeSlicing or mps block as the plugin holds it after parsing."""

    rename_by_default: bool
    fail_requests_greater_than_one: bool
    resources: tuple[SharingResource, ...]
    renames_ignored: bool = False
    devices_ignored: bool = False
    fail_requests_set: bool = False

    @property
    def replicated(self) -> bool:
        return any(entry.replicas > 1 for entry in self.resources)


def resource_name(value: Any) -> str:
    """NewResourceName: prefix nvidia.com/, at most 63 characters, a DNS subdomain after it."""
    if not isinstance(value, str):
        check_json_safe(value)
        raise PluginConfigError("plugin.json.value-type", kind=json_kind(value), type="string")
    name = value if value.startswith(RESOURCE_PREFIX) else RESOURCE_PREFIX + value
    if len(name) > MAX_RESOURCE_NAME:
        raise PluginConfigError("plugin.resource.too-long", limit=MAX_RESOURCE_NAME, name=name)
    suffix = name.split("/", 1)[1]
    if len(suffix) > 253 or not _DNS_SUBDOMAIN.match(suffix):
        raise PluginConfigError("plugin.resource.format", name=name)
    return name


def parse_replicated(value: Any, block: str) -> Replicated:
    """ReplicatedResources.UnmarshalJSON, then what DisableResourceNamingInConfig overrides."""
    if not isinstance(value, dict):
        if value is not None:
            check_json_safe(value)
            raise PluginConfigError("plugin.json.value-type", kind=json_kind(value), type=_RAW_MAP)
        value = {}
    obj = _exact_keys(value)
    rename = _bool(obj.get(RENAME_BY_DEFAULT))
    fail_gt_one = _bool(obj.get(FAIL_REQUESTS))
    entries = obj.get(RESOURCES)
    if RESOURCES not in obj:
        raise PluginConfigError("plugin.sharing.no-resources")
    if entries is not None and not isinstance(entries, list):
        check_json_safe(entries)
        raise PluginConfigError(
            "plugin.json.field-type",
            kind=json_kind(entries),
            field=f"sharing.{block}.resources",
            type="[]v1.ReplicatedResource",
        )
    parsed = [_entry(entry) for entry in entries or []]
    if not parsed:
        raise PluginConfigError("plugin.sharing.no-resources")
    renames = any(
        (rename and r not in ("", f"{n}.shared")) or (not rename and r) for n, _, r, _ in parsed
    )
    return Replicated(
        rename_by_default=rename,
        fail_requests_greater_than_one=fail_gt_one,
        resources=tuple(SharingResource(name, replicas) for name, replicas, _, _ in parsed),
        renames_ignored=renames,
        devices_ignored=any(not every for _, _, _, every in parsed),
        fail_requests_set=FAIL_REQUESTS in obj,
    )


def _exact_keys(obj: dict[Any, Any]) -> dict[str, Any]:
    """map[string]json.RawMessage: keys as JSON has them (a later duplicate replaces)."""
    out = {key_text(k): v for k, v in obj.items()}
    for item in out.values():
        check_json_safe(item)
    return out


def _bool(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    raise PluginConfigError("plugin.json.value-type", kind=json_kind(value), type="bool")


def _entry(entry: Any) -> tuple[str, int, str, bool]:
    """ReplicatedResource.UnmarshalJSON: (name, replicas, rename as written, devices == all)."""
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        raise PluginConfigError("plugin.json.value-type", kind=json_kind(entry), type=_RAW_MAP)
    obj = _exact_keys(entry)
    if NAME not in obj:
        raise PluginConfigError("plugin.sharing.no-name")
    name = resource_name("" if obj[NAME] is None else obj[NAME])
    every = _devices(obj.get(DEVICES, "all"))
    if REPLICAS not in obj:
        raise PluginConfigError("plugin.sharing.no-replicas")
    try:
        replicas = go_int(obj[REPLICAS], "replicas") or 0
    except GoJsonError as exc:
        raise PluginConfigError.of(exc) from exc
    if replicas < 2:
        raise PluginConfigError("plugin.sharing.replicas-below-two", replicas=replicas)
    rename = ""
    if RENAME in obj:
        rename = resource_name("" if obj[RENAME] is None else obj[RENAME])
    return name, replicas, rename, every


def _devices(value: Any) -> bool:
    """ReplicatedDevices.UnmarshalJSON; True when the selector is "all"."""
    if value is None or isinstance(value, str):
        text = value or ""
        if text != "all":
            raise PluginConfigError("plugin.devices.string", text=text)
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            count = go_int(value, "devices")
        except GoJsonError:
            count = None
        if count is not None:
            if count <= 0:
                raise PluginConfigError("plugin.devices.count", count=count)
            return False
    if isinstance(value, list):
        for item in value:
            _device_ref(item)
        return False
    raise PluginConfigError("plugin.devices.type", value=str(value))


def _device_ref(item: Any) -> None:
    if item is None or (isinstance(item, int | float) and not isinstance(item, bool)):
        try:
            go_int(item, "devices", unsigned=True)
            return
        except GoJsonError:
            pass
    if isinstance(item, str) and (_gpu_index(item) or _mig_index(item) or _is_uuid_ref(item)):
        return
    text = item if isinstance(item, str) else ""
    raise PluginConfigError("plugin.devices.item", text=text)


def _gpu_index(text: str) -> bool:
    return text.isascii() and text.isdigit() and int(text) < 2**64


def _mig_index(text: str) -> bool:
    parts = text.split(":", 1)
    return len(parts) == 2 and all(_gpu_index(part) for part in parts)


def go_uuid(text: str) -> bool:
    """github.com/google/uuid Parse: 36 (dashed), 38 ({...}), 45 (urn:uuid:...) or 32 (hex)."""
    if len(text) == 45:
        if text[:9].lower() != "urn:uuid:":
            return False
        text = text[9:]
    elif len(text) == 38:
        if text[0] != "{" or text[-1] != "}":
            return False
        text = text[1:-1]
    elif len(text) == 32:
        return bool(_HEX.match(text))
    if len(text) != 36 or any(text[i] != "-" for i in (8, 13, 18, 23)):
        return False
    return bool(_HEX.match(text.replace("-", "")))


def _is_uuid_ref(text: str) -> bool:
    if text.startswith("GPU-"):
        return go_uuid(text[4:])
    if not text.startswith("MIG-"):
        return False
    suffix = text[4:]
    if go_uuid(suffix):
        return True
    parts = suffix.split("/", 2)
    return (
        len(parts) == 3
        and parts[0].startswith("GPU-")
        and go_uuid(parts[0][4:])
        and all(_gpu_index(part) for part in parts[1:])
    )
