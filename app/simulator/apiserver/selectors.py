"""Label and field selectors as the API server parses them (labelSelector, fieldSelector)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.simulator.apiserver.errors import bad_request

_SET_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s*\((.*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")

_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": lambda o: str(o.get("metadata", {}).get("name", "")),
    "metadata.namespace": lambda o: str(o.get("metadata", {}).get("namespace", "")),
    "spec.nodeName": lambda o: str((o.get("spec") or {}).get("nodeName") or ""),
    "status.phase": lambda o: str((o.get("status") or {}).get("phase") or ""),
    "involvedObject.name": lambda o: str((o.get("involvedObject") or {}).get("name") or ""),
    "involvedObject.kind": lambda o: str((o.get("involvedObject") or {}).get("kind") or ""),
    "involvedObject.namespace": lambda o: str(
        (o.get("involvedObject") or {}).get("namespace") or ""
    ),
    "involvedObject.uid": lambda o: str((o.get("involvedObject") or {}).get("uid") or ""),
    "reason": lambda o: str(o.get("reason") or ""),
    "type": lambda o: str(o.get("type") or ""),
}


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value in self.values
        if self.op == "!=":
            return not present or value not in self.values
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        return not present


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        terms.append(current)
    return terms


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    """Parse a label selector; raise a 400 `ApiError` on bad syntax."""
    if not text or not text.strip():
        return ()
    requirements: list[Requirement] = []
    for term in _split_terms(text):
        if match := _SET_TERM.match(term):
            if match.group(1):
                raise bad_request(f"unable to parse requirement: {term!r}")
            values = frozenset(v.strip() for v in match.group(4).split(",") if v.strip())
            requirements.append(Requirement(match.group(2), match.group(3), values))
        elif match := _EQ_TERM.match(term):
            op = "!=" if match.group(2) == "!=" else "="
            requirements.append(Requirement(match.group(1), op, frozenset({match.group(3)})))
        elif match := _EXISTS_TERM.match(term):
            op = "!exists" if match.group(1) else "exists"
            requirements.append(Requirement(match.group(2), op, frozenset()))
        else:
            raise bad_request(f"unable to parse requirement: found {term!r}")
    return tuple(requirements)


def labels_match(requirements: tuple[Requirement, ...], labels: Mapping[str, str]) -> bool:
    return all(r.matches(labels) for r in requirements)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        actual = _FIELDS[self.field](obj)
        return (actual == self.value) == self.equal


def parse_field_selector(text: str | None) -> tuple[FieldRequirement, ...]:
    """Parse a field selector over the fields the simulator indexes."""
    if not text or not text.strip():
        return ()
    requirements: list[FieldRequirement] = []
    for term in text.split(","):
        match = re.match(r"^\s*([A-Za-z.]+)\s*(==|!=|=)\s*(.*?)\s*$", term)
        if not match:
            raise bad_request(f"invalid field selector: {term!r}")
        field, op, value = match.groups()
        if field not in _FIELDS:
            raise bad_request(f'field label not supported: "{field}"')
        requirements.append(FieldRequirement(field, op != "!=", value))
    return tuple(requirements)


@dataclass(frozen=True)
class Selector:
    """A parsed `labelSelector` + `fieldSelector` pair."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, label_text: str | None, field_text: str | None) -> Selector:
        return cls(parse_label_selector(label_text), parse_field_selector(field_text))

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if self.labels:
            labels = obj.get("metadata", {}).get("labels") or {}
            if not labels_match(self.labels, labels):
                return False
        return all(f.matches(obj) for f in self.fields)


def match_label_map(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """A nodeSelector-style map: every key present with the same value."""
    return all(labels.get(k) == v for k, v in (selector or {}).items())
