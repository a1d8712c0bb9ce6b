"""Sequences compared by identity: what kept results built from a list may reuse."""

from __future__ import annotations

import operator
from collections.abc import Sequence


def same_objects(old: Sequence[object], new: Sequence[object]) -> bool:
    """Whether two sequences hold the very same objects, in order (compared at C speed)."""
    if old is new:
        return True
    return len(old) == len(new) and all(map(operator.is_, old, new))


def replaced_positions(old: Sequence[object], new: Sequence[object]) -> list[int] | None:
    """The positions at which `new` holds another object than `old`; None when their
    lengths differ (an object added or removed: positions say nothing then)."""
    if same_objects(old, new):
        return []
    if len(old) != len(new):
        return None
    return [i for i, (mine, theirs) in enumerate(zip(old, new, strict=True)) if mine is not theirs]
