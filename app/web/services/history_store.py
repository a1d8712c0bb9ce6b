"""The GPU-hour history in one SQLite file (WAL): samples, rolled up with age, and queries.

Without a path the same database lives in memory: the history since the process started.

Four tables of the same shape: `at` (epoch seconds the row starts at), `span_s` (the seconds
it stands for), `level` (0 a sample, 1 a minute, 2 an hour), key columns and columns to add
up. Figures are kept as share-seconds (a share of GPUs held times the seconds it stood for),
so rolling up is adding, and a minute or an hour answers like the samples it replaced.
Rolled up per minute once a minute is over, per hour after two days, dropped after the retention
(app.domain.history.window.cutoffs). A file SQLite cannot read is set aside (renamed
`<name>.corrupt-<UTC time>`, never deleted) and a new one started; a full disk or a
read-only file is raised as HistoryUnavailableError, the rest of the dashboard unaffected.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.domain.history.records import HeldBucket, PastGpu, PastHold
from app.domain.history.sample import Sample
from app.domain.history.showback import HeldSeconds
from app.domain.history.window import AGES, HOUR_S, MINUTE_S, Ages, cutoffs
from app.errors import HistoryUnavailableError

SCHEMA_VERSION = "1"
RAW, MINUTE, HOUR = 0, 1, 2
ROLLUP_EVERY_S = 60.0  # rolling up is looked at most this often (at a sample's moment)


@dataclass(frozen=True)
class _Table:
    name: str
    keys: tuple[str, ...]
    sums: tuple[str, ...]
    maxes: tuple[str, ...] = ()

    def create(self) -> str:
        columns = ", ".join(f"{c}" for c in (*self.keys, *self.sums, *self.maxes))
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} "
            f"(at REAL NOT NULL, span_s REAL NOT NULL, level INTEGER NOT NULL, {columns})"
        )

    def rollup(self) -> tuple[str, str]:
        """Insert one row per bucket and keys from the rows of a level, then delete those."""
        keys = ", ".join(self.keys)
        added = ", ".join([*(f"SUM({c})" for c in self.sums), *(f"MAX({c})" for c in self.maxes)])
        columns = ", ".join(("at", "span_s", "level", *self.keys, *self.sums, *self.maxes))
        insert = (
            f"INSERT INTO {self.name} ({columns}) "
            f"SELECT CAST(at / :bucket AS INTEGER) * :bucket, :bucket, :to_level, {keys}, {added} "
            f"FROM {self.name} WHERE level = :from_level AND at < :cut "
            f"GROUP BY CAST(at / :bucket AS INTEGER), {keys}"
        )
        delete = f"DELETE FROM {self.name} WHERE level = :from_level AND at < :cut"
        return insert, delete


HELD = _Table("held", ("namespace", "owner", "node"), ("share_s", "used_s", "idle_s"))
SLOTS = _Table("slots", ("namespace", "owner", "node", "resource"), ("slot_s",))
GPUS = _Table(
    "gpus",
    ("node", "uuid", "gpu_index", "mode", "replicas", "config"),
    ("seen_s", "util_s", "util_known_s"),
)
HOLDS = _Table(
    "holds",
    ("node", "uuid", "gpu_index", "pod", "resource", "mode", "replicas", "config"),
    (),
    ("slots",),
)
TABLES = (HELD, SLOTS, GPUS, HOLDS)


class HistoryStore:
    """One SQLite file; every call holds one lock (the sampler writes, requests read)."""

    def __init__(
        self,
        path: Path | None,
        *,
        max_pages: int | None = None,
        ages: Ages = AGES,
    ) -> None:
        self.path = path
        self._ages = ages
        self.set_aside: Path | None = None  # where an unreadable file was moved at open
        self._max_pages = max_pages  # tests: a full disk, as SQLite reports it
        self._lock = threading.Lock()
        self._rolled_at = float("-inf")
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except OSError as exc:  # its folder cannot be made: a file there, a read-only mount
            raise HistoryUnavailableError("history.read-only", str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            if self.path is None or not _unreadable(exc) or not self.path.exists():
                raise _unavailable(exc) from exc
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        self.path.rename(aside)
        for suffix in ("-wal", "-shm"):
            leftover = self.path.with_name(self.path.name + suffix)
            if leftover.exists():
                leftover.rename(aside.with_name(aside.name + suffix))
        self.set_aside = aside
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            raise _unavailable(exc) from exc

    def _connect(self) -> sqlite3.Connection:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        where = ":memory:" if self.path is None else self.path
        db = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            checked = db.execute("PRAGMA quick_check").fetchall()
            if checked != [("ok",)]:
                raise sqlite3.DatabaseError(f"database disk image is malformed: {checked[:3]}")
            if self._max_pages is not None:
                db.execute(f"PRAGMA max_page_count={int(self._max_pages)}")
            with _transaction(db):
                for table in TABLES:
                    db.execute(table.create())
                    db.execute(f"CREATE INDEX IF NOT EXISTS {table.name}_at ON {table.name} (at)")
                    db.execute(
                        f"CREATE INDEX IF NOT EXISTS {table.name}_level ON {table.name} (level, at)"
                    )
                db.execute("CREATE INDEX IF NOT EXISTS holds_node ON holds (node, at)")
                db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(self, sample: Sample, *, span_s: float, retention_days: int) -> None:
        """Keep one sample standing for `span_s` seconds from its moment; roll up with age."""
        at = sample.at.timestamp()
        with self._writing():
            self._db.executemany(
                "INSERT INTO held VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        at,
                        span_s,
                        h.namespace,
                        h.owner,
                        h.node,
                        h.share * span_s,
                        h.used_share * span_s,
                        h.idle_share * span_s,
                    )
                    for h in sample.holdings
                ],
            )
            self._db.executemany(
                "INSERT INTO slots VALUES (?, ?, 0, ?, ?, ?, ?, ?)",
                [
                    (at, span_s, h.namespace, h.owner, h.node, resource, count * span_s)
                    for h in sample.holdings
                    for resource, count in h.slots
                ],
            )
            self._db.executemany(
                "INSERT INTO gpus VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        at,
                        span_s,
                        g.node,
                        g.gpu_uuid,
                        g.gpu_index,
                        g.mode,
                        g.replicas,
                        g.config,
                        span_s,
                        (g.utilization_pct or 0) * span_s,
                        span_s if g.utilization_pct is not None else 0.0,
                    )
                    for g in sample.gpus
                ],
            )
            self._db.executemany(
                "INSERT INTO holds VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        at,
                        span_s,
                        h.node,
                        h.gpu_uuid,
                        h.gpu_index,
                        h.pod,
                        h.resource,
                        h.mode,
                        h.replicas,
                        h.config,
                        h.slots,
                    )
                    for h in sample.holds
                ],
            )
            if at - self._rolled_at >= ROLLUP_EVERY_S:
                self._roll_up(at, retention_days=retention_days)
                self._rolled_at = at

    def _roll_up(self, now_s: float, *, retention_days: int) -> None:
        cut = cutoffs(now_s, retention_days=retention_days, ages=self._ages)
        for table in TABLES:
            self._db.execute(f"DELETE FROM {table.name} WHERE at < ?", (cut.drop,))
            insert, delete = table.rollup()
            for params in (
                {"bucket": MINUTE_S, "from_level": RAW, "to_level": MINUTE, "cut": cut.to_minutes},
                {"bucket": HOUR_S, "from_level": MINUTE, "to_level": HOUR, "cut": cut.to_hours},
            ):
                self._db.execute(insert, params)
                self._db.execute(delete, {"from_level": params["from_level"], "cut": params["cut"]})

    def held(self, start_s: float, end_s: float) -> tuple[list[HeldSeconds], float]:
        """Share- and slot-seconds per namespace, owner and node with `at` in the window,
        and the physical GPU-seconds there."""
        window = (start_s, end_s)
        with self._reading():
            shares = self._db.execute(
                "SELECT namespace, owner, node, SUM(share_s), SUM(used_s), SUM(idle_s) "
                "FROM held WHERE at >= ? AND at < ? GROUP BY namespace, owner, node",
                window,
            ).fetchall()
            slots = self._db.execute(
                "SELECT namespace, owner, node, resource, SUM(slot_s) FROM slots "
                "WHERE at >= ? AND at < ? GROUP BY namespace, owner, node, resource",
                window,
            ).fetchall()
            (physical,) = self._db.execute(
                "SELECT COALESCE(SUM(seen_s), 0) FROM gpus WHERE at >= ? AND at < ?", window
            ).fetchone()
        by_key: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
        for namespace, owner, node, resource, slot_s in slots:
            by_key.setdefault((namespace, owner, node), []).append((resource, slot_s))
        found = [
            HeldSeconds(
                ns,
                owner,
                node,
                share_s,
                used_s,
                idle_s,
                tuple(sorted(by_key.pop((ns, owner, node), []))),
            )
            for ns, owner, node, share_s, used_s, idle_s in shares
        ]
        found += [HeldSeconds(*key, slot_s=tuple(sorted(rest))) for key, rest in by_key.items()]
        return found, float(physical)

    def buckets(self, start_s: float, end_s: float, *, step_s: float) -> list[HeldBucket]:
        """The window in buckets of `step_s` seconds: held, used, idle and physical."""
        params = {"start": start_s, "end": end_s, "step": step_s}
        bucket = "CAST((at - :start) / :step AS INTEGER)"
        where = "WHERE at >= :start AND at < :end"
        with self._reading():
            held = self._db.execute(
                f"SELECT {bucket}, SUM(share_s), SUM(used_s), SUM(idle_s) FROM held {where} "
                f"GROUP BY 1",
                params,
            ).fetchall()
            physical = dict(
                self._db.execute(
                    f"SELECT {bucket}, SUM(seen_s) FROM gpus {where} GROUP BY 1", params
                ).fetchall()
            )
        count = int(-(-(end_s - start_s) // step_s))
        sums = {index: (share, used, idle) for index, share, used, idle in held}
        return [
            HeldBucket(index, *sums.get(index, (0.0, 0.0, 0.0)), physical.get(index, 0.0))
            for index in range(count)
        ]

    def holds_at(self, node: str, at_s: float) -> tuple[list[PastHold], list[PastGpu]]:
        """Who held each GPU of `node` at the moment `at_s`, and the node's GPUs then."""
        moment = {"node": node, "at": at_s}
        with self._reading():
            holds = self._db.execute(
                "SELECT uuid, gpu_index, pod, resource, slots, mode, replicas, config, at, span_s "
                "FROM holds WHERE node = :node AND at <= :at AND :at < at + span_s "
                "ORDER BY gpu_index, pod, resource",
                moment,
            ).fetchall()
            gpus = self._db.execute(
                "SELECT DISTINCT uuid, gpu_index, mode, replicas, config FROM gpus "
                "WHERE node = :node AND at <= :at AND :at < at + span_s ORDER BY gpu_index, uuid",
                moment,
            ).fetchall()
        return [PastHold(*row) for row in holds], [PastGpu(*row) for row in gpus]

    def span(self) -> tuple[float, float] | None:
        """The first and last moments the file holds, or None when it holds none."""
        with self._reading():
            first, last = self._db.execute("SELECT MIN(at), MAX(at + span_s) FROM gpus").fetchone()
        return None if first is None else (float(first), float(last))

    def page_count(self) -> int:
        """The file's size in SQLite pages (its growth: the bench reads it)."""
        with self._reading():
            (pages,) = self._db.execute("PRAGMA page_count").fetchone()
        return int(pages)

    def levels(self) -> dict[int, int]:
        """How many rows of each level the file holds (tests and the bench read it)."""
        with self._reading():
            return dict(self._db.execute("SELECT level, COUNT(*) FROM held GROUP BY level"))

    @contextmanager
    def _writing(self) -> Iterator[None]:
        with self._lock:
            try:
                with _transaction(self._db):
                    yield
            except sqlite3.Error as exc:
                raise _unavailable(exc) from exc

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise _unavailable(exc) from exc


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (a full disk)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _unreadable(exc: sqlite3.DatabaseError) -> bool:
    """SQLite's words for a file that is not a database or is damaged."""
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "corrupt" in text


def _unavailable(exc: sqlite3.Error) -> HistoryUnavailableError:
    """SQLite's error as ours: a full disk, a read-only file, or else unreadable."""
    text = str(exc)
    lowered = text.lower()
    if "full" in lowered:
        return HistoryUnavailableError("history.disk-full", text)
    if "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered:
        return HistoryUnavailableError("history.read-only", text)
    return HistoryUnavailableError("history.unreadable", text)
