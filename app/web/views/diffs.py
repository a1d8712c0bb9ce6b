"""The admin preview's diffs: lines with their kind so the page can colour and count them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DiffLine:
    kind: str  # add | del | hunk | file | same
    text: str


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff as lines with their kind, so the page can colour them."""
    found = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        found.append(DiffLine(kind, line))
    return found


def changed_count(diff: str) -> int:
    return sum(1 for line in diff_lines(diff) if line.kind in ("add", "del"))
