"""A message the domain emits as a code and its params; the web layer words it (issue 32).

`Coded` is a `str` (so it travels through evidence, JSON bodies and stored records as text
unchanged) whose text is the code followed by its params as JSON: `plugin.replicas-below-two
{"replicas":1}`. `parse_coded` reads one back, from a record read again too. Many of these
codes stand for what the device plugin (or Kubernetes) itself says of an input it refuses: the
English catalog reproduces that upstream message word for word, so an admin can match it
against the plugin's log (docs/TRANSLATING.md, "Upstream messages").
"""

from __future__ import annotations

import json
import re
from typing import Any

_CODED = re.compile(r"^((?:plugin|quantity)\.[a-z0-9.-]+)(\{.*\})?$", re.DOTALL)
Param = str | int | float | bool | None | list[Any]


class Coded(str):
    """A code and its params, held as `code{"param":value,...}`."""

    code: str
    params: dict[str, Param]

    def __new__(cls, code: str, **params: Param) -> Coded:
        text = code + (json.dumps(params, sort_keys=True, separators=(",", ":")) if params else "")
        made = super().__new__(cls, text)
        made.code = code
        made.params = params
        return made


def parse_coded(text: object) -> Coded | None:
    """The `Coded` a text holds, or None for any other text (plain words, a hostile record)."""
    if isinstance(text, Coded):
        return text
    if not isinstance(text, str) or len(text) > 8192:
        return None
    match = _CODED.match(text)
    if match is None:
        return None
    try:
        params = json.loads(match[2]) if match[2] else {}
    except ValueError:
        return None
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        return None
    return Coded(match[1], **params)


class CodedError(ValueError):
    """An error raised as a code and params; `message` is its `Coded` text."""

    def __init__(self, code: str, **params: Param) -> None:
        self.message = Coded(code, **params)
        super().__init__(self.message)
        self.code = code
        self.params = params
