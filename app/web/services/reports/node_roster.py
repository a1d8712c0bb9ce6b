"""The nodes the cluster has, as the latest snapshot build listed them.

The one thing the report store needs of the snapshot side: which node names are real. The
snapshot builder publishes them after each listing; the report store reads them. Neither
calls the other (an import-linter contract keeps the store from importing the snapshot
services).
"""

from __future__ import annotations


class NodeRoster:
    """Node names of the latest build; every name counts as known before the first."""

    def __init__(self) -> None:
        self._names: frozenset[str] | None = None
        self.version = 0  # moves whenever the set of names changes

    def publish(self, names: frozenset[str]) -> None:
        if names != self._names:
            self._names = names
            self.version += 1

    def has(self, name: str) -> bool:
        names = self._names
        return names is None or name in names

    def names(self) -> frozenset[str] | None:
        """The names, or None before the first build (nothing can be sorted out yet)."""
        return self._names
