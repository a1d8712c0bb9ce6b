"""Long-kept pydantic models with one copy of each `fields_set`.

Every pydantic instance carries the set of field names it was given
(`__pydantic_fields_set__`), a fresh set per instance, and the stored reports' sets are all
equal to a handful of distinct ones (what that costs: docs/PERFORMANCE.md).
`share_fields_sets` swaps each for one shared set of the same names (a set, not a
frozenset: pydantic-core's `exclude_unset` wants a set). Nothing adds to it: reports are
frozen models (pydantic adds names only on assignment), and `model_copy` gives the copy a
copy of the set before adding to it. Equality and dumps do not change
(tests/web/test_report_memory.py).
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from pydantic import BaseModel

MAX_SETS = 4_096  # distinct name sets kept; models beyond keep their own
_SETS: dict[frozenset[str], set[str]] = {}
_LOCK = threading.Lock()
_LEAVES = frozenset({str, int, float, bool, type(None), datetime})  # values holding no model


def share_fields_sets(model: BaseModel) -> None:
    """Give `model` and every model inside it the shared set of its set field names."""
    todo: list[BaseModel] = [model]
    with _LOCK:
        while todo:
            item = todo.pop()
            names = item.__pydantic_fields_set__
            key = frozenset(names)
            shared = _SETS.get(key)
            if shared is None and len(_SETS) < MAX_SETS:
                shared = _SETS[key] = set(key)
            if shared is not None and names is not shared:
                object.__setattr__(item, "__pydantic_fields_set__", shared)
            for value in item.__dict__.values():
                if type(value) not in _LEAVES:
                    _inner_models(value, todo)


def _inner_models(value: Any, todo: list[BaseModel]) -> None:
    kind = type(value)
    if kind is list or kind is tuple:
        todo.extend(v for v in value if hasattr(type(v), "__pydantic_fields__"))
    elif kind is dict:
        todo.extend(v for v in value.values() if hasattr(type(v), "__pydantic_fields__"))
    elif hasattr(kind, "__pydantic_fields__"):
        todo.append(value)
