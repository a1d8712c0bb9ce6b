"""The GPU-hour history in one SQLite file (WAL): spans of unchanged holdings, and queries.

Without a path the same database lives in memory: the history since the process started.

A row is a span: from `t0` to `t1` (epoch seconds) a key held the same thing; an open span
(one the latest sample still showed) ends where the latest sample's interval ends, kept once
in `meta` rather than on every open row. Four tables:
`held` (namespace, owner, node: the GPU share held, with used and idle share-seconds added
up inside the span), `slots` (slots per resource), `gpus` (a GPU and its node's plugin mode,
replicas and config), `holds` (a pod holding slots of a GPU). Each sample extends the open
spans it still shows and opens one for what changed, so a holding unchanged for a week is
one row: the file grows with changes, not with time, and a window's figures are exact to the
sample (used and idle inside a span the window cuts are counted pro rata). An open `held`
span keeps the rate its used and idle seconds grow at, per second sampled (the sum of the
intervals the samples stood for, `sampled_s` in `meta`), and its seconds are written only
when that rate changes or the span closes: a sample writes what changed, never a row per
open span. Spans that end before the retention go. A file SQLite cannot read is set aside
(renamed `<name>.corrupt-<UTC time>`, never deleted) and a new one started; a full disk or a
read-only file is raised as HistoryUnavailableError, the rest of the dashboard unaffected.

One process writes a file (`WriterLock`): a store that cannot take the writer's lock only
reads the file, every read where the writer's latest sample left it, and takes over at a
sample once the writer ended, going on from the spans it left open.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.domain.history.records import HeldBucket, PastGpu, PastHold
from app.domain.history.sample import Sample
from app.domain.history.showback import HeldSeconds, ShowbackBy, held_seconds
from app.errors import HistoryUnavailableError
from app.web.services.history.spans import OpenSpans
from app.web.services.history.sqlite import (
    DROP_EVERY_S,
    LENGTH,
    OVERLAP,
    T1,
    TABLES,
    Clocks,
    Table,
    WriterLock,
    few,
    open_spans,
    overlapping,
    read_clocks,
    seconds_so_far,
    set_aside,
    set_up,
    span_end,
    transaction,
    unavailable,
    unreadable,
    write_spans,
)


class HistoryStore:
    """One SQLite file; every call holds one lock (the sampler writes, requests read). Its
    process writes the file only while it holds the file's writer lock (`writes`)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.set_aside: Path | None = None  # where an unreadable file was moved at open
        self._lock = threading.Lock()
        self._spans = {table.name: OpenSpans(table.name) for table in TABLES}
        self._open_t1: float | None = None  # where the open spans end
        self._sampled_s = 0.0  # the sampled clock: the seconds the samples stood for, summed
        self._dropped_at = float("-inf")
        self._writer: WriterLock | None = None  # None: in memory, this store's alone
        self._db = self._open_file()
        if self.writes:
            self._load_open()

    @property
    def writes(self) -> bool:
        """Whether this store writes its file (it holds the writer's lock)."""
        return self._writer is None or self._writer.held

    def writer_elsewhere(self) -> str | None:
        """Who writes the file where another process does, as it named itself; else None."""
        return None if self._writer is None or self._writer.held else self._writer.holder()

    def _open_file(self) -> sqlite3.Connection:
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = WriterLock(self.path)
                self._writer.take()
            return self._connect()
        except OSError as exc:  # its folder cannot be made or written: a read-only mount
            raise HistoryUnavailableError("history.read-only", str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            # only the writer sets an unreadable file aside: a reader says it cannot read
            if not (self.path is not None and self.writes and unreadable(exc)):
                raise unavailable(exc) from exc
            if not self.path.exists():
                raise unavailable(exc) from exc
        self.set_aside = set_aside(self.path)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            raise unavailable(exc) from exc

    def _connect(self) -> sqlite3.Connection:
        where = ":memory:" if self.path is None else self.path
        db = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            checked = db.execute("PRAGMA quick_check").fetchall()
            if checked != [("ok",)]:
                raise sqlite3.DatabaseError(f"database disk image is malformed: {checked[:3]}")
            if self.writes:
                set_up(db)
        except BaseException:
            db.close()
            raise
        return db

    def _load_open(self) -> None:
        """Where the spans a previous run (or the latest good write) left open end, and the
        sampled clock then: a sample right after goes on from them, compared key by key
        with the open spans on file."""
        for spans in self._spans.values():
            spans.forget()
        with self._reading() as clocks:
            self._open_t1, self._sampled_s = clocks["open_t1"], clocks["sampled_s"] or 0.0

    def close(self) -> None:
        with self._lock:
            self._db.close()
            if self._writer is not None:
                self._writer.release()

    def add(self, sample: Sample, *, span_s: float, retention_days: int) -> bool:
        """Keep one sample standing for `span_s` seconds from its moment; False where another
        process writes the file (this store only reads it)."""
        if not self._take_over():
            return False
        t0 = sample.at.timestamp()
        t1 = t0 + span_s
        last, clock = self._open_t1, self._sampled_s
        follows = last is not None and last - span_s <= t0 <= last + span_s
        # spans a sample does not follow end where the last interval did, or at this sample
        # if it comes before that (a clock set back); a sample inside the last interval (a
        # process that took over from the writer mid-interval) stands from where that one
        # ends: spans never overlap
        ended_t1 = last if follows or last is None else min(last, t0)
        begins = max(t0, last) if follows and last is not None else t0
        try:
            with self._writing():
                for table in TABLES:
                    self._extend(
                        table,
                        sample,
                        span=(begins, t1),
                        ended={"t1": ended_t1, "clock": clock},
                        follows=follows,
                    )
                self._open_t1, self._sampled_s = t1, clock + (t1 - begins)
                self._db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('open_t1', ?), ('sampled_s', ?)",
                    (repr(t1), repr(self._sampled_s)),
                )
                if t0 - self._dropped_at >= DROP_EVERY_S:
                    drop = t0 - retention_days * 24 * 3600
                    for table in TABLES:
                        self._db.execute(
                            f"DELETE FROM {table.name} WHERE open = 0 AND t1 < ?", (drop,)
                        )
                    self._dropped_at = t0
        except BaseException:
            self._load_open()  # the transaction was rolled back: so is what memory holds
            raise
        return True

    def _take_over(self) -> bool:
        """Whether this store writes the file: it takes the writer's lock once the process
        that held it ended, and goes on from the spans that one left open."""
        if self._writer is None or self._writer.held:
            return True
        if not self._writer.take():
            return False
        try:
            with self._lock:
                set_up(self._db)
        except sqlite3.Error as exc:
            raise unavailable(exc) from exc
        self._load_open()
        return True

    def _extend(
        self,
        table: Table,
        sample: Sample,
        *,
        span: tuple[float, float],
        ended: dict[str, float | None],
        follows: bool,
    ) -> None:
        """Close the open spans the sample no longer shows (where the previous interval
        ended), keep the others open (they end with this one), open one for each key the
        sample shows first, and write the seconds of an open span whose rates changed: from
        the items that changed since the spans' sample where they tell, else key by key (a
        sample that does not follow the open spans closes them all). `span`: the sample's
        t0 and t1; `ended`: where the previous interval ended (t1) and the sampled clock
        then (clock)."""
        spans = self._spans[table.name]
        moved = spans.changes(sample) if follows else None
        for change in moved or ():  # node by node: what is kept is small
            pairs = spans.pairs(change)
            if pairs is None:  # a key shown twice: compared with the file (nodes so far too)
                moved = None
                break
            was, now = pairs  # what each key adds, then and now
            went = [key for key in was if key not in now]
            new = [key for key in now if key not in was]
            rerated = [key for key in now if key in was and was[key] != now[key]]
            write_spans(
                self._db, table, change.rowids, went, new, rerated, sums=now, at=span, ended=ended
            )
            spans.written(change, now)
        if moved is not None:
            return
        if follows:
            rowids, rates = open_spans(self._db, table)
        else:
            self._db.execute(f"{table.closing()} WHERE open = 1", ended)
            rowids, rates = {}, {}
        shown, once = spans.shown(sample)
        went = [key for key in rowids if key not in shown]
        new = [key for key in shown if key not in rowids]
        rerated = [key for key in shown if key in rates and rates[key] != shown[key]]
        write_spans(self._db, table, rowids, went, new, rerated, sums=shown, at=span, ended=ended)
        spans.keep(sample, rowids, once=once)

    def held(
        self, start_s: float, end_s: float, *, by: ShowbackBy
    ) -> tuple[list[HeldSeconds], float]:
        """Share- and slot-seconds per namespace, owner or node (`by`) inside the window,
        and the physical GPU-seconds there."""
        pro_rata = f"{OVERLAP} / {LENGTH}"
        used, idle = (seconds_so_far(total) for total in ("used_s", "idle_s"))
        with self._reading() as clocks:
            window = {"start": start_s, "end": end_s, **clocks}
            inside = f"WHERE {overlapping(indexed=few(self._db, start_s, clocks))}"
            shares = self._db.execute(
                f"SELECT {by}, SUM(share * {OVERLAP}), SUM({used} * {pro_rata}), "
                f"SUM({idle} * {pro_rata}) FROM held {inside} GROUP BY {by}",
                window,
            ).fetchall()
            slots = self._db.execute(
                f"SELECT {by}, resource, SUM(slots * {OVERLAP}) FROM slots {inside} "
                f"GROUP BY {by}, resource",
                window,
            ).fetchall()
            (physical,) = self._db.execute(
                f"SELECT COALESCE(SUM({OVERLAP}), 0) FROM gpus {inside}", window
            ).fetchone()
        return held_seconds(by, shares, slots), float(physical)

    def buckets(self, start_s: float, end_s: float, *, step_s: float) -> list[HeldBucket]:
        """The window in buckets of `step_s` seconds: held, used, idle and physical."""
        count = max(int(-(-(end_s - start_s) // step_s)), 1)
        # the buckets as rows, then each span's seconds inside each bucket it overlaps
        buckets = (
            "WITH RECURSIVE b(i, lo, hi) AS (SELECT 0, :start, :start + :step UNION ALL "
            "SELECT i + 1, lo + :step, hi + :step FROM b WHERE i + 1 < :count) "
        )
        end = span_end("s")
        inside = f"(MIN({end}, b.hi) - MAX(s.t0, b.lo))"
        length = f"MAX({end} - s.t0, 1e-9)"
        used, idle = (seconds_so_far(total, span="s") for total in ("used_s", "idle_s"))
        with self._reading() as clocks:
            params = {"start": start_s, "end": end_s, "step": step_s, **clocks}
            params["count"] = count
            spans = overlapping(indexed=few(self._db, start_s, clocks), span="s")
            # the window's spans read once, each against the few dozen buckets (CROSS JOIN
            # keeps that order; SQLite would read each bucket's spans by t0's index instead)
            join = f"CROSS JOIN b ON s.t0 < b.hi AND {end} > b.lo WHERE {spans}"
            held = self._db.execute(
                f"{buckets} SELECT b.i, SUM(s.share * {inside}), "
                f"SUM({used} * {inside} / {length}), "
                f"SUM({idle} * {inside} / {length}) FROM held s {join} "
                "GROUP BY b.i",
                params,
            ).fetchall()
            physical = dict(
                self._db.execute(
                    f"{buckets} SELECT b.i, SUM({inside}) FROM gpus s {join} GROUP BY b.i", params
                ).fetchall()
            )
        sums = {index: (share, used, idle) for index, share, used, idle in held}
        return [
            HeldBucket(index, *sums.get(index, (0.0, 0.0, 0.0)), physical.get(index, 0.0))
            for index in range(count)
        ]

    def holds_at(self, node: str, at_s: float) -> tuple[list[PastHold], list[PastGpu]]:
        """Who held each GPU of `node` at the moment `at_s`, and the node's GPUs then."""
        with self._reading() as clocks:
            moment = {"node": node, "at": at_s, **clocks}
            holds = self._db.execute(
                "SELECT uuid, gpu_index, pod, resource, slots, mode, replicas, config, t0, "
                f"{T1} - t0 FROM holds WHERE node = :node AND t0 <= :at AND :at < {T1} "
                "ORDER BY gpu_index, pod, resource",
                moment,
            ).fetchall()
            gpus = self._db.execute(
                "SELECT DISTINCT uuid, gpu_index, mode, replicas, config FROM gpus "
                f"WHERE node = :node AND t0 <= :at AND :at < {T1} ORDER BY gpu_index, uuid",
                moment,
            ).fetchall()
        return [PastHold(*row) for row in holds], [PastGpu(*row) for row in gpus]

    def holds_between(self, node: str, start_s: float, end_s: float) -> list[PastHold]:
        """Every span of a pod holding slots of a GPU of `node` inside the window, clipped."""
        with self._reading() as clocks:
            window = {"node": node, "start": start_s, "end": end_s, **clocks}
            rows = self._db.execute(
                "SELECT uuid, gpu_index, pod, resource, slots, mode, replicas, config, "
                f"MAX(t0, :start), {OVERLAP} FROM holds WHERE node = :node AND t0 < :end "
                f"AND {T1} > :start ORDER BY gpu_index, t0, pod",
                window,
            ).fetchall()
        return [PastHold(*row) for row in rows]

    def limit_pages(self, pages: int) -> None:
        """Caps the file at `pages` SQLite pages (tests: a full disk, as SQLite reports it)."""
        with self._lock:
            self._db.execute(f"PRAGMA max_page_count={int(pages)}")

    def page_count(self) -> int:
        """The file's size in SQLite pages (its growth: the bench reads it)."""
        with self._reading():
            (pages,) = self._db.execute("PRAGMA page_count").fetchone()
        return int(pages)

    def rows(self) -> dict[str, int]:
        """How many spans each table holds (tests and the bench read it)."""
        with self._reading():
            return {
                table.name: int(
                    self._db.execute(f"SELECT COUNT(*) FROM {table.name}").fetchone()[0]
                )
                for table in TABLES
            }

    @contextmanager
    def _writing(self) -> Iterator[None]:
        with self._lock:
            try:
                with transaction(self._db):
                    yield
            except sqlite3.Error as exc:
                raise unavailable(exc) from exc

    @contextmanager
    def _reading(self) -> Iterator[Clocks]:
        """One read of the file as one moment left it (whichever process writes it), with
        where its open spans end and the sampled clock then, as the latest sample wrote."""
        with self._lock:
            try:
                self._db.execute("BEGIN")
                try:
                    yield read_clocks(self._db)
                finally:
                    if self._db.in_transaction:
                        self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise unavailable(exc) from exc
