"""One key spelling per JSON body: camelCase, as Kubernetes spells its fields.

A key renamed to camelCase is still read under its old name for one release (documented as
deprecated in the OpenAPI document and docs/API.md); a body giving both spellings with
different values is refused (422) rather than one of them silently winning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from app.domain.described import Described


def renamed_keys(data: Any, renamed: Mapping[str, str]) -> Any:
    """`data` with each old key of `renamed` (old -> new) read as its new spelling."""
    if not isinstance(data, dict) or not any(old in data for old in renamed):
        return data
    read = dict(data)
    for old, new in renamed.items():
        if old not in read:
            continue
        value = read.pop(old)
        if new in read and read[new] != value:
            raise PydanticCustomError(
                "conflicting_spellings",
                "{old} (deprecated) and {new} give different values: send {new} only",
                {"old": old, "new": new},
            )
        read[new] = value
    return read


def _deprecated_properties(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Each old spelling as a property of the schema, marked deprecated."""
    renamed: Mapping[str, str] = getattr(model, "RENAMED", {})
    properties = schema.setdefault("properties", {})
    for old, new in renamed.items():
        current = properties.get(new, {})
        properties[old] = {
            key: value for key, value in current.items() if key not in ("title", "description")
        } | {
            "deprecated": True,
            "description": f"Deprecated: the old spelling of `{new}`, still read for one "
            f"release. A body giving both with different values is a 422.",
        }


class CamelBody(Described):
    """A JSON request body: camelCase keys, no unknown ones, old spellings in `RENAMED`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_deprecated_properties)

    RENAMED: ClassVar[Mapping[str, str]] = {}  # old spelling -> its camelCase key

    @model_validator(mode="before")
    @classmethod
    def _read_old_spellings(cls, data: Any) -> Any:
        return renamed_keys(data, cls.RENAMED)
