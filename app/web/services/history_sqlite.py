"""The history file's SQLite plumbing: its span tables, transactions and errors as ours."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from app.domain.history.sample import Sample
from app.errors import HistoryUnavailableError

SCHEMA_VERSION = "2"
FLUSH_EVERY_S = 60.0  # used/idle seconds of open spans are written at least this often
DROP_EVERY_S = 3600.0  # spans past the retention are looked for at most this often
Key = tuple[object, ...]


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[str, ...]  # what a span is the same of
    sums: tuple[str, ...] = ()  # added up inside a span

    def create(self) -> str:
        columns = ", ".join((*self.keys, *self.sums))
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} (t0 REAL NOT NULL, t1 REAL NOT NULL, "
            f"open INTEGER NOT NULL, {columns})"
        )

    def insert(self) -> str:
        marks = ", ".join("?" for _ in (*self.keys, *self.sums))
        return f"INSERT INTO {self.name} VALUES (?, ?, 1, {marks})"


HELD = Table("held", ("namespace", "owner", "node", "share"), ("used_s", "idle_s"))
SLOTS = Table("slots", ("namespace", "owner", "node", "resource", "slots"))
GPUS = Table("gpus", ("node", "uuid", "gpu_index", "mode", "replicas", "config"))
HOLDS = Table(
    "holds", ("node", "uuid", "gpu_index", "pod", "resource", "slots", "mode", "replicas", "config")
)
TABLES = (HELD, SLOTS, GPUS, HOLDS)
T1 = "IIF(open = 1, :open_t1, t1)"  # where a span ends, open or not
OVERLAP = f"(MIN({T1}, :end) - MAX(t0, :start))"  # seconds of a span inside the window
LENGTH = f"MAX({T1} - t0, 1e-9)"


def keys_of(sample: Sample) -> dict[str, dict[Key, tuple[float, ...]]]:
    """Per table, the keys a sample shows and what it adds inside their spans."""
    return {
        "held": {
            (h.namespace, h.owner, h.node, h.share): (h.used_share, h.idle_share)
            for h in sample.holdings
            if h.share
        },
        "slots": {
            (h.namespace, h.owner, h.node, resource, count): ()
            for h in sample.holdings
            for resource, count in h.slots
        },
        "gpus": {
            (g.node, g.gpu_uuid, g.gpu_index, g.mode, g.replicas, g.config): () for g in sample.gpus
        },
        "holds": {
            (
                h.node,
                h.gpu_uuid,
                h.gpu_index,
                h.pod,
                h.resource,
                h.slots,
                h.mode,
                h.replicas,
                h.config,
            ): ()
            for h in sample.holds
        },
    }


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (a full disk)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def unreadable(exc: sqlite3.DatabaseError) -> bool:
    """SQLite's words for a file that is not a database or is damaged."""
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "corrupt" in text


def unavailable(exc: sqlite3.Error) -> HistoryUnavailableError:
    """SQLite's error as ours: a full disk, a read-only file, or else unreadable."""
    text = str(exc)
    lowered = text.lower()
    if "full" in lowered:
        return HistoryUnavailableError("history.disk-full", text)
    if "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered:
        return HistoryUnavailableError("history.read-only", text)
    return HistoryUnavailableError("history.unreadable", text)
