"""Fault injection and request counting for tests: API down, the next N requests fail."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

from app.simulator.resources import lookup_kind


def normalise_kind(kind: str | None) -> str | None:
    """`pods`, `pod`, `po` and `Pod` all name the kind `Pod`."""
    if kind is None or kind == "":
        return None
    resource = lookup_kind(kind)
    return resource.kind if resource else kind


@dataclass
class FaultRule:
    """Answer the next `remaining` requests matching verb and kind (None = any) with `code`."""

    verb: str | None
    kind: str | None
    code: int
    remaining: int

    def matches(self, verb: str, kind: str) -> bool:
        return (self.verb is None or self.verb == verb) and (self.kind is None or self.kind == kind)


class Faults:
    """Thread-safe fault switches and the per-(verb, kind) request counter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.unavailable = False
        self._rules: list[FaultRule] = []
        self._counts: Counter[tuple[str, str]] = Counter()

    def inject(
        self, *, verb: str | None = None, kind: str | None = None, code: int = 500, count: int = 1
    ) -> None:
        if count < 1:
            raise ValueError("count must be >= 1")
        if code < 400 or code > 599:
            raise ValueError("code must be an HTTP error code (400-599)")
        with self._lock:
            self._rules.append(FaultRule(verb or None, normalise_kind(kind), code, count))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self.unavailable = False

    def pending(self) -> list[FaultRule]:
        with self._lock:
            return [FaultRule(r.verb, r.kind, r.code, r.remaining) for r in self._rules]

    def record(self, verb: str, kind: str) -> int | None:
        """Count a request; return the injected error code for it, if any."""
        with self._lock:
            self._counts[(verb, kind)] += 1
            for rule in self._rules:
                if rule.matches(verb, kind):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
                    return rule.code
        return None

    def counts(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()
