"""The history file's SQLite plumbing: its span tables, transactions and errors as ours."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from app.domain.history.sample import GpuHold, GpuSeen, Holding, Sample
from app.domain.sequences import same_objects
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


Sums = tuple[float, ...]  # what an item adds inside its span (used and idle share)


def _held(h: Holding) -> list[tuple[Key, Sums]]:
    return (
        [((h.namespace, h.owner, h.node, h.share), (h.used_share, h.idle_share))] if h.share else []
    )


def _slots(h: Holding) -> list[tuple[Key, Sums]]:
    return [((h.namespace, h.owner, h.node, resource, count), ()) for resource, count in h.slots]


def _gpus(g: GpuSeen) -> list[tuple[Key, Sums]]:
    return [((g.node, g.gpu_uuid, g.gpu_index, g.mode, g.replicas, g.config), ())]


def _holds(h: GpuHold) -> list[tuple[Key, Sums]]:
    key = (
        h.node,
        h.gpu_uuid,
        h.gpu_index,
        h.pod,
        h.resource,
        h.slots,
        h.mode,
        h.replicas,
        h.config,
    )
    return [(key, ())]


# per table: the sample's items it keeps, and the keys an item shows with what it adds
SHOWN: dict[str, tuple[Callable[[Sample], Sequence[Any]], Callable[[Any], list[tuple[Key, Sums]]]]]
SHOWN = {
    "held": (lambda sample: sample.holdings, _held),
    "slots": (lambda sample: sample.holdings, _slots),
    "gpus": (lambda sample: sample.gpus, _gpus),
    "holds": (lambda sample: sample.holds, _holds),
}


def keys_of(sample: Sample) -> dict[str, dict[Key, Sums]]:
    """Per table, the keys a sample shows and what it adds inside their spans."""
    return {
        name: dict(pair for item in items(sample) for pair in keys(item))
        for name, (items, keys) in SHOWN.items()
    }


class ShownKeys:
    """The keys the latest sample showed in one table, kept from sample to sample: a new
    sample costs its items that are not the very objects the last one held (the sampler
    keeps an unchanged node's items). `update` says which keys went and which came, or None
    where the sample shows a key twice (the caller then compares every key)."""

    def __init__(self, name: str) -> None:
        self._items_of, self._keys_of = SHOWN[name]
        self._items: Sequence[Any] = ()
        self._at: dict[int, int] = {}  # an item's identity -> its position in the items
        self._pairs = 0  # the keys the items show, counted with repeats
        self.shown: dict[Key, Sums] = {}

    def update(self, sample: Sample) -> tuple[list[Key], list[Key]] | None:
        items = self._items_of(sample)
        if same_objects(self._items, items):
            return [], []
        at = dict(zip(map(id, items), range(len(items)), strict=True))
        went = [self._items[self._at[i]] for i in self._at.keys() - at.keys()]
        came = [items[n] for n in sorted(at[i] for i in at.keys() - self._at.keys())]
        self._items, self._at = items, at
        if self._pairs != len(self.shown):  # a key shown twice: the sample's keys anew
            self._rebuild(items)
            return None
        gone: list[Key] = []
        for item in went:
            for key, _ in self._keys_of(item):
                self.shown.pop(key, None)
                gone.append(key)
                self._pairs -= 1
        new: list[Key] = []
        for item in came:
            for key, added in self._keys_of(item):
                self.shown[key] = added
                new.append(key)
                self._pairs += 1
        if self._pairs != len(self.shown):
            self._rebuild(items)
            return None
        return [key for key in gone if key not in self.shown], new

    def _rebuild(self, items: Sequence[Any]) -> None:
        pairs = [pair for item in items for pair in self._keys_of(item)]
        self.shown, self._pairs = dict(pairs), len(pairs)


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
