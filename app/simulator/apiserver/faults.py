"""Fault injection and request counting for tests: API down, the next N requests fail, and
writes held until a number of them are in flight at once (a race made on purpose)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TypedDict, Unpack

from app.simulator.apiserver.resources import lookup_kind


def normalise_kind(kind: str | None) -> str | None:
    """`pods`, `pod`, `po` and `Pod` all name the kind `Pod`."""
    if kind is None or kind == "":
        return None
    resource = lookup_kind(kind)
    return resource.kind if resource else kind


class FaultSpec(TypedDict, total=False):
    """Which requests fail, and how: verb and kind (None = any), code, count, after_commit."""

    verb: str | None
    kind: str | None
    code: int  # default 500
    count: int  # default 1
    after_commit: bool  # the write is made, then its answer replaced by the error


@dataclass
class FaultRule:
    """Answer the next `remaining` requests matching verb and kind (None = any) with `code`."""

    verb: str | None
    kind: str | None
    code: int
    remaining: int

    def matches(self, verb: str, kind: str) -> bool:
        return (self.verb is None or self.verb == verb) and (self.kind is None or self.kind == kind)


@dataclass
class Gate:
    """Hold requests matching verb and kind until `count` of them have arrived (or a bound)."""

    verb: str
    kind: str
    count: int
    deadline: float
    arrived: int = 0

    @property
    def open(self) -> bool:
        return self.arrived >= self.count or time.monotonic() >= self.deadline


class Faults:
    """Thread-safe fault switches and the per-(verb, kind) request counter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.unavailable = False
        self._rules: list[FaultRule] = []
        self._lost: list[FaultRule] = []  # answers lost after the write was made
        self._counts: Counter[tuple[str, str]] = Counter()
        self._gates: list[Gate] = []

    def hold(self, *, verb: str, kind: str, count: int = 2, timeout_s: float = 5.0) -> None:
        """The next `count` requests of verb and kind wait for each other, then all go on:
        two changes that write the same object at the same instant, for real."""
        with self._lock:
            deadline = time.monotonic() + timeout_s
            self._gates.append(Gate(verb, normalise_kind(kind) or kind, count, deadline))

    async def wait_at_gate(self, verb: str, kind: str) -> None:
        """Wait while a gate holds this request (returns at once when none does)."""
        with self._lock:
            self._gates = [g for g in self._gates if not g.open]  # past their bound: gone
            gate = next((g for g in self._gates if (g.verb, g.kind) == (verb, kind)), None)
            if gate is None:
                return
            gate.arrived += 1
            if gate.arrived >= gate.count:
                self._gates.remove(gate)
        while not gate.open:
            await asyncio.sleep(0.005)

    def inject(self, **spec: Unpack[FaultSpec]) -> None:
        code, count = spec.get("code", 500), spec.get("count", 1)
        if count < 1:
            raise ValueError("count must be >= 1")
        if code < 400 or code > 599:
            raise ValueError("code must be an HTTP error code (400-599)")
        with self._lock:
            rule = FaultRule(
                spec.get("verb") or None, normalise_kind(spec.get("kind")), code, count
            )
            # After commit: the write is made, then its answer replaced by the error.
            (self._lost if spec.get("after_commit", False) else self._rules).append(rule)

    def clear(self) -> None:
        with self._lock:
            self._gates.clear()
            self._rules.clear()
            self._lost.clear()
            self.unavailable = False

    def pending(self) -> list[FaultRule]:
        with self._lock:
            return [
                FaultRule(r.verb, r.kind, r.code, r.remaining) for r in self._rules + self._lost
            ]

    def record(self, verb: str, kind: str) -> int | None:
        """Count a request; return the injected error code for it, if any."""
        with self._lock:
            self._counts[(verb, kind)] += 1
            return _take(self._rules, verb, kind)

    def lost_answer(self, method: str, path: str) -> int | None:
        """The error that replaces the answer to a write already made (a lost answer)."""
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            method.upper()
        )
        if verb is None:
            return None
        kinds = [normalise_kind(part) for part in reversed(path.split("/")) if lookup_kind(part)]
        if not kinds or kinds[0] is None:
            return None
        with self._lock:
            return _take(self._lost, verb, kinds[0])

    def counts(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()


def _take(rules: list[FaultRule], verb: str, kind: str) -> int | None:
    """The code of the first rule matching verb and kind, counting it down."""
    for rule in rules:
        if rule.matches(verb, kind):
            rule.remaining -= 1
            if rule.remaining <= 0:
                rules.remove(rule)
            return rule.code
    return None
