"""Bounds on the numbers read from objects anyone may write, and objects set aside.

Pods, their annotations, DRA slices and claims are written by tenants: input from a
stranger. Every number the engine reads from them is checked against what a cluster can
physically hold before it is used, and an object whose field fails (a bound, or whatever
error its parser raised) is set aside: it counts for nothing and a finding names it
(kind, namespace/name, field, the value cut short), while the snapshot of the rest stays
fresh. Pure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

# No node advertises more slots of one resource, and no claim draws more shares, than this.
MAX_COUNT = 1_000_000
# No GPU has more memory than this (16 TiB), in MiB.
MAX_MIB = 2**24
# A number written as text longer than this is no count or quantity a cluster holds.
MAX_NUMBER_CHARS = 64
# What a finding shows of a refused value.
CUT_CHARS = 40

# What a parser may raise on a hostile value: turned into a set-aside object, never a
# failed snapshot. (MemoryError and the like are not input errors and are not caught.)
READ_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    ArithmeticError,
    KeyError,
    IndexError,
    AttributeError,
    RecursionError,
)


# JSON read from anyone (a preview token, a stored change record): nested no deeper than
# this by default, and no integer longer than MAX_JSON_INT_DIGITS digits.
MAX_JSON_DEPTH = 16
MAX_JSON_INT_DIGITS = 18


class OutOfBounds(ValueError):
    """One field of an object holds a value the dashboard refuses to count."""

    def __init__(self, field: str, value: Any, reason: str) -> None:
        super().__init__(f"{field}: {reason} ({cut(value)})")
        self.field = field
        self.value = cut(value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SetAside:
    """An object left out of the figures because one of its fields could not be counted."""

    kind: str  # Pod, ResourceSlice, ResourceClaim
    key: str  # namespace/name (name for cluster-scoped objects)
    field: str
    value: str  # cut short
    reason: str  # out-of-bounds | not-a-number | a parser error's type name


def cut(value: Any) -> str:
    """`value` as text, cut to CUT_CHARS characters (an ellipsis and the length past it)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= CUT_CHARS:
        return text
    return f"{text[:CUT_CHARS]}… ({len(text)} characters)"


def number_text(value: Any, *, field: str) -> str:
    """`value` as the text of a number; OutOfBounds when it is too long or not ASCII digits."""
    if isinstance(value, bool):
        raise OutOfBounds(field, value, "not-a-number")
    text = str(value).strip() if isinstance(value, str | int | float) else None
    if text is None or len(text) > MAX_NUMBER_CHARS or not text.isascii():
        raise OutOfBounds(field, value, "not-a-number")
    return text


def bounded(count: int, *, field: str, value: Any, high: int = MAX_COUNT, low: int = 0) -> int:
    """`count` when low <= count <= high; else OutOfBounds naming `field` and `value`."""
    if count < low or count > high:
        raise OutOfBounds(field, value, "out-of-bounds")
    return count


def set_aside(kind: str, key: str, error: BaseException) -> SetAside:
    """The record of an object whose reading raised `error`."""
    if isinstance(error, OutOfBounds):
        return SetAside(kind, key, error.field, error.value, error.reason)
    field = getattr(error, "field", "")
    if field and isinstance(field, str):  # a parser's error naming its field (QuantityError)
        reason = str(getattr(error, "code", type(error).__name__))
        return SetAside(kind, key, field, cut(getattr(error, "value", "")), reason)
    return SetAside(kind, key, "?", cut(str(error)), type(error).__name__)


class JsonRefused(ValueError):
    """Text that is no bounded JSON: `why` a code (too-deep, not-json, number-constant,
    number-too-long, number-out-of-range), `params` its values."""

    def __init__(self, why: str, /, **params: object) -> None:
        super().__init__(why, params)
        self.why = why
        self.params = params


def read_json(
    text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, max_int_digits: int = MAX_JSON_INT_DIGITS
) -> Any:
    """The JSON value `text` holds, read once with every bound; JsonRefused saying why not.

    The one JSON reader for text anyone may write: no NaN or Infinity, no integer past
    `max_int_digits` digits, no float out of range, nothing nested past `max_depth` (a
    12,000-bracket token is refused, never a RecursionError).
    """

    def no_constant(name: str) -> float:
        raise JsonRefused("number-constant", name=name)

    def short_int(digits: str) -> int:
        if len(digits.lstrip("-")) > max_int_digits:
            raise JsonRefused("number-too-long", digits=len(digits))
        return int(digits)

    try:
        value = json.loads(text, parse_constant=no_constant, parse_int=short_int)
    except RecursionError as exc:
        raise JsonRefused("too-deep", levels=max_depth) from exc
    except JsonRefused:
        raise
    except ValueError as exc:  # JSONDecodeError, and UnicodeDecodeError for bytes
        raise JsonRefused("not-json", error=str(exc)[:120]) from exc
    _check_json(value, max_depth)
    return value


def _check_json(value: Any, max_depth: int) -> None:
    """JsonRefused when `value` nests deeper than `max_depth` or holds a float out of range."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise JsonRefused("too-deep", levels=max_depth)
        if isinstance(item, float) and not math.isfinite(item):
            raise JsonRefused("number-out-of-range")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
