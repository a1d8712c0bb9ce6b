"""Go's encoding/json rules as the plugin meets them, after sigs.k8s.io/yaml turned YAML to JSON.

Keys become strings and are sorted (the YAML->JSON step goes through a Go map), struct fields
match a key exactly or case-insensitively, and a field seen twice takes the later value (a
nested struct merges). A number fits an `int` only when Go prints it as an integer literal:
`4.0` and `1e1` do (`4`, `10`), `2.5`, `1e21` and 2**63 do not. A YAML number or boolean
given to a Go string field arrives as its text (`version: 1` is version "1").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from app.domain.coded import CodedError
from app.domain.plugin.shape import Struct

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1


class GoJsonError(CodedError):
    """A value encoding/json would not decode into its Go field (`plugin.json.*` codes)."""


def json_kind(value: Any) -> str:
    """The JSON kind Go's error messages name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {number_text(value)}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def number_text(value: int | float) -> str:
    """How Go's json.Marshal prints a YAML number (float64 'f' below 1e21, else 'e')."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value).replace("e+", "e+").replace("inf", "+Inf")


def key_text(key: Any) -> str:
    """A YAML map key as sigs.k8s.io/yaml turns it into a JSON object key."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return repr(key)
    raise GoJsonError("plugin.yaml.map-key", key=repr(key))


def check_json_safe(value: Any) -> None:
    """json.Marshal refuses NaN and infinities anywhere (even under a key nobody reads)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise GoJsonError("plugin.yaml.unsupported-value", value=str(value))
    if isinstance(value, list):
        for item in value:
            check_json_safe(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            key_text(key)
            check_json_safe(item)


def struct_fields(obj: Any, struct: Struct) -> dict[str, list[Any]]:
    """Every value given to each field of a Go struct, in the order json.Unmarshal sees them."""
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise GoJsonError("plugin.json.value-type", kind=json_kind(obj), type=struct.go_type)
    found: dict[str, list[Any]] = {}
    for text, value in sorted((key_text(k), v) for k, v in obj.items()):
        name = struct.field_of(text)
        if name is not None:
            found.setdefault(name, []).append(value)
        else:
            check_json_safe(value)
    return found


def merged_struct(values: list[Any], struct: Struct) -> dict[str, list[Any]]:
    """A struct field given several objects: each decodes into the same struct, in turn."""
    out: dict[str, list[Any]] = {}
    for value in values:
        for name, items in struct_fields(value, struct).items():
            out.setdefault(name, []).extend(items)
    return out


def last(fields: Mapping[str, list[Any]], name: str) -> Any:
    """The value a pointer field ends with (a later null resets it to nil)."""
    values = fields.get(name)
    return values[-1] if values else None


def go_string(value: Any, where: str, *, from_yaml_scalar: bool = False) -> str | None:
    """A *string field (None: nil).

    `from_yaml_scalar`: sigs.k8s.io/yaml turns a number or boolean into its text for a string
    field it can see (Config.version); it cannot see through the embedded flags struct, so
    there a number is a decoding error.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if not from_yaml_scalar:
        check_json_safe(value)
        raise GoJsonError(
            "plugin.json.field-type", kind=json_kind(value), field=where, type="string"
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value) if math.isfinite(value) else str(value)
    raise GoJsonError("plugin.json.field", kind=json_kind(value), field=where)


def go_bool(value: Any, where: str) -> bool | None:
    """A *bool field (None: nil)."""
    if value is None or isinstance(value, bool):
        return value
    check_json_safe(value)
    raise GoJsonError("plugin.json.field", kind=json_kind(value), field=where)


def go_int(value: Any, where: str, *, unsigned: bool = False) -> int | None:
    """An int (int64) or uint64 field; None for null (json leaves the field as it was)."""
    if value is None:
        return None
    check_json_safe(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = number_text(value)
        if text.lstrip("-").isdigit():
            number = int(text)
            low, high = (0, UINT64_MAX) if unsigned else (INT64_MIN, INT64_MAX)
            if low <= number <= high:
                return number
    kind = "uint64" if unsigned else "int"
    raise GoJsonError("plugin.json.field-type", kind=json_kind(value), field=where, type=kind)
