"""The history file's SQLite plumbing: its span tables, transactions and errors as ours,
and the lock that lets one process write a file."""

from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.errors import HistoryUnavailableError

SCHEMA_VERSION = "2"
DROP_EVERY_S = 3600.0  # spans past the retention are looked for at most this often
Key = tuple[object, ...]
Sums = tuple[float, ...]  # what an item adds inside its span (used and idle share)
Clocks = dict[str, float | None]  # where the open spans end, and the sampled clock then


@dataclass(frozen=True)
class Table:
    """A span table. Its `sums` are seconds added up inside a span: an open span keeps the
    rate each one grows at (`rates`, per second sampled) from `since_s` on the sampled clock,
    and its seconds up to then are written; they are written again only when the rate
    changes or the span closes, never at every sample."""

    name: str
    keys: tuple[str, ...]  # what a span is the same of
    sums: tuple[str, ...] = ()  # seconds added up inside a span
    rates: tuple[str, ...] = ()  # an open span's rate of each sum, since `since_s`

    def columns(self) -> tuple[str, ...]:
        """The columns after t0, t1 and open, in the order of an insert."""
        return (*self.keys, *self.sums, *self.rates, *(("since_s",) if self.rates else ()))

    def create(self) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} (t0 REAL NOT NULL, t1 REAL NOT NULL, "
            f"open INTEGER NOT NULL, {', '.join(self.columns())})"
        )

    def insert(self) -> str:
        columns = ", ".join(("t0", "t1", "open", *self.columns()))
        marks = ", ".join("?" for _ in self.columns())
        return f"INSERT INTO {self.name} ({columns}) VALUES (?, ?, 1, {marks})"

    def closing(self) -> str:
        """Close spans where :t1 is, their seconds up to :clock (the sampled clock) written."""
        return f"UPDATE {self.name} SET open = 0, t1 = :t1{self._written()}"

    def rated(self) -> str:
        """A span's seconds up to :clock written, and its new rates from then on."""
        rates = ", ".join(f"{rate} = :{rate}" for rate in self.rates)
        return f"UPDATE {self.name} SET since_s = :clock, {rates}{self._written()}"

    def _written(self) -> str:
        return "".join(
            f", {total} = {total} + {rate} * (:clock - since_s)"
            for total, rate in zip(self.sums, self.rates, strict=True)
        )


HELD = Table(
    "held",
    ("namespace", "owner", "node", "share"),
    ("used_s", "idle_s"),
    ("used_rate", "idle_rate"),
)
SLOTS = Table("slots", ("namespace", "owner", "node", "resource", "slots"))
GPUS = Table("gpus", ("node", "uuid", "gpu_index", "mode", "replicas", "config"))
HOLDS = Table(
    "holds", ("node", "uuid", "gpu_index", "pod", "resource", "slots", "mode", "replicas", "config")
)
TABLES = (HELD, SLOTS, GPUS, HOLDS)


def span_end(span: str = "") -> str:
    """Where a span ends, open or not (`span`: its alias)."""
    of = f"{span}." if span else ""
    return f"IIF({of}open = 1, :open_t1, {of}t1)"


T1 = span_end()
OVERLAP = f"(MIN({T1}, :end) - MAX(t0, :start))"  # seconds of a span inside the window
LENGTH = f"MAX({T1} - t0, 1e-9)"


def overlapping(*, indexed: bool, span: str = "") -> str:
    """The spans inside the window (:start, :end). `indexed`: only those that end after it
    starts, read through the (open, t1) index (every open span, whose t1 column is stale,
    and the closed ones ending past :start); else every span in one pass, which costs less
    where most of them are inside (through the index, each span costs a lookup). `span`:
    the table's alias. t0's own index is kept out: `+t0`."""
    of = f"{span}." if span else ""
    inside = f"+{of}t0 < :end AND {span_end(span)} > :start"
    return f"({of}open, {of}t1) > (0, :start) AND {inside}" if indexed else inside


def few(db: sqlite3.Connection, start_s: float, clocks: Clocks) -> bool:
    """Whether a window from `start_s` leaves out over half the time the file holds, so its
    spans are read through the index of where they end (`overlapping`): SQLite's planner
    cannot tell how many spans a window holds, and through the index each costs a lookup,
    more than reading them all in one pass where most of them are inside."""
    (first,) = db.execute("SELECT MIN(t0) FROM held").fetchone()  # through t0's index
    last = clocks["open_t1"]
    return first is not None and last is not None and start_s - first > (last - first) / 2


def read_clocks(db: sqlite3.Connection) -> Clocks:
    """Where the open spans end and the sampled clock then, as the latest sample wrote."""
    names = ("open_t1", "sampled_s")
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", names).fetchall())
    return {name: float(meta[name]) if name in meta else None for name in names}


def open_spans(db: sqlite3.Connection, table: Table) -> tuple[dict[Key, int], dict[Key, Sums]]:
    """The table's open spans: each key's rowid, and its rates where the table keeps any."""
    opened: dict[Key, int] = {}
    rates: dict[Key, Sums] = {}
    width = len(table.keys)
    for rowid, *columns in db.execute(
        f"SELECT rowid, {', '.join((*table.keys, *table.rates))} FROM {table.name} WHERE open = 1"
    ):
        key = tuple(columns[:width])
        opened[key] = rowid
        if table.rates:
            rates[key] = tuple(columns[width:])
    return opened, rates


def write_spans(
    db: sqlite3.Connection,
    table: Table,
    rowids: dict[Key, int],
    went: list[Key],
    new: list[Key],
    rerated: list[Key],
    *,
    sums: dict[Key, Sums],
    at: tuple[float, float],
    ended: dict[str, float | None],
) -> None:
    """Close the open spans of the keys that `went` (their seconds written up to `ended`:
    where the previous interval ended, t1, and the sampled clock then), open one from `at`
    (t0, t1) for each `new` key, and write the seconds of the open spans of the keys
    `rerated`, from then on at their new rates; `sums`: what each key adds. `rowids`: the
    open spans' row ids per key, kept up to date."""
    closed = [rowids.pop(key) for key in went]
    if closed:
        db.executemany(
            f"{table.closing()} WHERE rowid = :rowid",
            ({**ended, "rowid": rowid} for rowid in closed),
        )
    zero = tuple(0.0 for _ in table.sums)
    since = (ended["clock"],) if table.rates else ()
    insert = table.insert()
    for key in new:
        rowids[key] = int(db.execute(insert, (*at, *key, *zero, *sums[key], *since)).lastrowid or 0)
    if rerated:
        db.executemany(
            f"{table.rated()} WHERE rowid = :rowid",
            (
                {**ended, "rowid": rowids[key], **dict(zip(table.rates, sums[key], strict=True))}
                for key in rerated
            ),
        )


def set_aside(path: Path) -> Path:
    """Moves a file SQLite cannot read (and its WAL) to `<name>.corrupt-<UTC time>`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    path.rename(aside)
    for suffix in ("-wal", "-shm"):
        leftover = path.with_name(path.name + suffix)
        if leftover.exists():
            leftover.rename(aside.with_name(aside.name + suffix))
    return aside


def seconds_so_far(total: str, *, span: str = "") -> str:
    """A held span's used or idle seconds (`total`): those written, and an open span's rate
    times the seconds sampled since (:sampled_s, the sampled clock now). `span`: its alias."""
    of = f"{span}." if span else ""
    rate = HELD.rates[HELD.sums.index(total)]
    return f"({of}{total} + IIF({of}open = 1, {of}{rate} * (:sampled_s - {of}since_s), 0))"


def create(db: sqlite3.Connection, table: Table) -> None:
    """The table, with the columns added since a file was made (an open span's rates: its
    spans' rates read 0 until the next sample sets them)."""
    db.execute(table.create())
    made = {row[1] for row in db.execute(f"PRAGMA table_info({table.name})")}
    for column in table.columns():
        if column not in made:
            db.execute(f"ALTER TABLE {table.name} ADD COLUMN {column} NOT NULL DEFAULT 0")


def set_up(db: sqlite3.Connection) -> None:
    """The file's tables and indexes as the writer keeps them: an earlier layout's spans
    dropped, columns added since a file was made, the indexes of this version."""
    with transaction(db):
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        found = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if found is not None and found[0] != SCHEMA_VERSION:
            for table in TABLES:  # an earlier layout: its rows cannot be read as spans
                db.execute(f"DROP TABLE IF EXISTS {table.name}")
        for table in TABLES:
            create(db, table)
            db.execute(f"CREATE INDEX IF NOT EXISTS {table.name}_t ON {table.name} (t0, t1)")
            # where spans end (a window's spans, the open ones, those past the retention);
            # it replaced an index of `open` alone on 2026-12-06
            db.execute(f"DROP INDEX IF EXISTS {table.name}_open")
            db.execute(f"CREATE INDEX IF NOT EXISTS {table.name}_ends ON {table.name} (open, t1)")
        db.execute("CREATE INDEX IF NOT EXISTS holds_node ON holds (node, t0)")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))


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


class WriterLock:
    """One writer per history file: an exclusive advisory lock (`flock`) on `<file>.lock`
    beside it, taken without waiting and held until `release`, this object's collection or
    the process's end (the kernel frees it with the descriptor, however the process ended).

    Two processes on one file (a restart overlapping the old pod, two replicas on one
    volume) would both sample into it and count every holding twice: the one holding the
    lock writes, any other only reads (WAL lets it read while the writer writes) and tries
    the lock again at its next sample, so it takes over when the writer ends. The holder
    writes its name (host, the pod's name in Kubernetes, and process id) into the lock file
    for the others to say who writes."""

    def __init__(self, path: Path) -> None:
        """Opens (or makes) the lock file: OSError where its folder cannot be written."""
        self.path = path.with_name(f"{path.name}.lock")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._closing = weakref.finalize(self, os.close, self._fd)
        self.held = False

    def take(self) -> bool:
        """Whether this process holds the lock now (taken if no other process holds it)."""
        if self.held:
            return True
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self.held = True
        name = f"{socket.gethostname()} (pid {os.getpid()})".encode()
        os.pwrite(self._fd, name, 0)  # over the last holder's name, never an empty file
        os.ftruncate(self._fd, len(name))
        return True

    def holder(self) -> str:
        """Who holds the lock, as it named itself."""
        try:
            return self.path.read_text(errors="replace").strip()
        except OSError:
            return ""

    def release(self) -> None:
        """Frees the lock (closes the descriptor: this object cannot take it again)."""
        self.held = False
        self._closing()
