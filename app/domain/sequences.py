"""Sequences compared by identity: what kept results built from a list may reuse."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def same_objects(old: Sequence[object], new: Sequence[object]) -> bool:
    """Whether two sequences hold the very same objects, in order (compared at C speed)."""
    if old is new:
        return True
    return len(old) == len(new) and all(map(operator.is_, old, new))


def replaced_in_place(
    old: Sequence[T], new: Sequence[T], *, key: Callable[[T], object]
) -> list[int] | None:
    """The positions at which `new` holds another object than `old` under the same `key`
    (a node's new state, say, by its name); None when that is not all that changed (an
    object added or removed, or another key at a position: positions say nothing then)."""
    if same_objects(old, new):
        return []
    if len(old) != len(new):
        return None
    changed = [
        i for i, (mine, theirs) in enumerate(zip(old, new, strict=True)) if mine is not theirs
    ]
    return changed if all(key(old[i]) == key(new[i]) for i in changed) else None
