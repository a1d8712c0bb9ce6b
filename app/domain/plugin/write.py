"""config.yaml written through the shape it is read with (`shape`).

A write asks for a typed sharing block (a `Replicated`, as the reader returns one) and, for a
v0.20+ plugin, an allocation policy. The old text is read once, by the bounded reader; the
keys the plugin would decode into `sharing` (or `flags`, `flags.plugin`), in any case, fold
into one, merged as the plugin merges them; every key the shape does not model stays as
written. When the plugin would read the result as it reads the old text, the old text is
kept byte for byte (its comments, its spelling). What the writer had to replace or merge
comes back as coded notes (the change's warnings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from app.domain.coded import Coded
from app.domain.goyaml import GoYamlError, load_first_document
from app.domain.plugin.replicated import Replicated, SharingResource, resource_name
from app.domain.plugin.shape import (
    ALLOCATION_POLICY,
    CONFIG,
    CONFIG_VERSION,
    FAIL_REQUESTS,
    FLAGS,
    NAME,
    PLUGIN_FLAGS,
    RENAME_BY_DEFAULT,
    REPLICAS,
    RESOURCES,
    SHARING,
    Struct,
)


@dataclass(frozen=True)
class Written:
    """The config text to store, and what writing it replaced or merged (coded)."""

    text: str
    notes: tuple[Coded, ...]


def write_config(
    old_text: str | None, *, time_slicing: Replicated, allocation_policy: str | None = None
) -> Written:
    """The old config with sharing.timeSlicing as `time_slicing` (and the policy, if given)."""
    notes: list[Coded] = []
    base = _document(old_text, notes)
    config: dict[Any, Any] = dict(base) if base else {"version": CONFIG_VERSION}
    sharing = _take_struct(config, "sharing", CONFIG)
    if _last(_take(sharing, "mps", SHARING)) is not None:
        notes.append(Coded("mps-removed"))
    old_block = _last(_take(sharing, "timeSlicing", SHARING))
    sharing["timeSlicing"] = _block(old_block, time_slicing, notes)
    config["sharing"] = sharing
    if allocation_policy is not None:
        flags = _take_struct(config, "flags", CONFIG)
        plugin = _take_struct(flags, "plugin", FLAGS)
        _take(plugin, ALLOCATION_POLICY, PLUGIN_FLAGS)
        plugin[ALLOCATION_POLICY] = allocation_policy
        flags["plugin"] = plugin
        config["flags"] = flags
    if old_text is not None and base and config == base:
        return Written(old_text, tuple(notes))  # the plugin would read the same: kept as is
    return Written(dump_yaml(config), tuple(notes))


def _document(old_text: str | None, notes: list[Coded]) -> dict[Any, Any]:
    """config.yaml as the plugin reads it (the one bounded YAML reader), or {} to replace it.

    The text is whatever the ConfigMap's writers put there: it is read once, bounded, and
    only its typed result is edited and compared, never an alias-expanded tree.
    """
    if not old_text or not old_text.strip():
        return {}
    try:
        loaded = load_first_document(old_text)
    except GoYamlError as exc:
        if exc.code.startswith("plugin.bound."):
            bound = exc.code.removeprefix("plugin.bound.")
            notes.append(Coded("config-past-bound-replaced", bound=bound, **exc.params))
        else:
            notes.append(Coded("config-not-yaml-replaced"))
        return {}
    if isinstance(loaded, dict):
        return loaded
    if loaded is not None:
        notes.append(Coded("config-not-mapping-replaced"))
    return {}


def _block(old: Any, wanted: Replicated, notes: list[Coded]) -> dict[Any, Any]:
    """The old block's keys kept, the asked settings and resources set (exact keys)."""
    block: dict[Any, Any] = dict(old) if isinstance(old, dict) else {}
    block[RENAME_BY_DEFAULT] = wanted.rename_by_default
    block[FAIL_REQUESTS] = wanted.fail_requests_greater_than_one
    block[RESOURCES] = _entries(block.get(RESOURCES), wanted.resources, notes)
    return block


def _entries(old: Any, wanted: tuple[SharingResource, ...], notes: list[Coded]) -> list[Any]:
    """Each asked resource's first entry gets its replicas; a later entry naming the same
    resource (which the plugin would serve too) is merged into it; a missing one comes first."""
    asked = {resource.name: resource.replicas for resource in wanted}
    done: set[str] = set()
    kept: list[Any] = []
    for entry in old if isinstance(old, list) else []:
        if not isinstance(entry, dict):
            continue
        name = _resource(entry.get(NAME))
        if name is None or name not in asked:
            kept.append(dict(entry))
        elif name in done:
            said = {"name": str(entry.get(NAME)), "replicas": str(entry.get(REPLICAS))}
            notes.append(Coded("time-slicing-entry-merged", **said))
        else:
            kept.append({**entry, REPLICAS: asked[name]})
            done.add(name)
    missing = [{NAME: name, REPLICAS: count} for name, count in asked.items() if name not in done]
    return [*missing, *kept]


def _resource(name: Any) -> str | None:
    """The resource an entry names, as the plugin resolves it (None: one it refuses)."""
    try:
        return resource_name(name)
    except ValueError:
        return None


def _take(obj: dict[Any, Any], name: str, struct: Struct) -> list[Any]:
    """Remove every key the plugin decodes into field `name`; their values, in its order."""
    keys = sorted(key for key in obj if struct.field_of(key) == name)
    return [obj.pop(key) for key in keys]


def _take_struct(obj: dict[Any, Any], name: str, struct: Struct) -> dict[Any, Any]:
    """Remove the keys of struct field `name`; the one object the plugin decodes from them."""
    inner = struct.fields[name]
    assert inner is not None, name
    return _merged(_take(obj, name, struct), inner)


def _merged(values: list[Any], struct: Struct) -> dict[Any, Any]:
    """Objects given to one struct field, as one: each field's value is the one the plugin
    keeps (a struct field merged in turn), at its first key; keys no field reads are kept."""
    objects: list[dict[Any, Any]] = []
    for value in values:
        if value is None and struct.pointer:
            objects = []  # a null resets a pointer: what came before is dropped
        elif isinstance(value, dict):
            objects.append(value)
    given: dict[str, list[Any]] = {}
    for obj in objects:
        for key in sorted(key for key in obj if isinstance(key, str)):
            field = struct.field_of(key)
            if field is not None:
                given.setdefault(field, []).append(obj[key])
    out: dict[Any, Any] = {}
    for obj in objects:
        for key, value in obj.items():
            name = struct.field_of(key)
            if name is None:
                out[key] = value
            elif name in given:
                out[key] = _field_value(given.pop(name), struct.fields[name])
    return out


def _field_value(values: list[Any], inner: Struct | None) -> Any:
    """A value field keeps its last value; a struct field given twice merges."""
    if inner is None or len(values) == 1:
        return values[-1]
    return _merged(values, inner)


def _last(values: list[Any]) -> Any:
    return values[-1] if values else None


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (config.yaml inside a ConfigMap) as literal blocks."""


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_presenter)


def dump_yaml(obj: Any) -> str:
    """YAML as a person writes it: keys in their order, multi-line strings as blocks."""
    return yaml.dump(obj, Dumper=_BlockDumper, sort_keys=False, default_flow_style=False)
