"""The GPU-hour history's cost on a big cluster: `python -m tests.bench.history_bench [nodes...]`.

Over a hand-built snapshot (8 GPUs x 8 time-sliced slots per node, 28 pods holding slots of
each node, every pod its own owner: the most keys a sample can have), prints per size:
- a sample's cost in CPU time, as the sampler counts it (taken from the snapshot, then
  written: the spans it closes and opens), and that cost as a share of one core at the
  default 15 s interval: the sampler's steady state, where 1 % of the nodes changed since
  the previous sample (the first sample, everything new, is said apart), the writes' mean
  and median over 8 samples;
- the file's growth: the first sample writes every key once; an unchanged cluster adds
  nothing after; a day in which every pod is replaced once adds about as much again;
- the showback query's CPU time over 7 and 30 days of such days (every pod replaced daily;
  CPU time, as the machine it runs on may be loaded: SQLite reads on the calling thread).
`make bench` runs it, the month included, at 1,000 and 10,000 nodes (about 21 minutes at 10,000).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.domain.history.sample import Sample, Sampler
from app.domain.history.showback import showback
from app.domain.snapshot import PodSlots, Snapshot
from app.web.services.history.store import HistoryStore
from tests.web.page_snapshots import big_cluster

INTERVAL_S = 15.0
RETENTION_DAYS = 35
END = datetime(2026, 12, 1, tzinfo=UTC)


def _ms(run: object, rounds: int, *, clock: Callable[[], float] = time.perf_counter) -> float:
    """The median of `rounds` runs, in ms of `clock` (wall time; the CPU time of the
    thread where `time.thread_time`)."""
    times = []
    for _ in range(rounds):
        started = clock()
        run()  # type: ignore[operator]
        times.append((clock() - started) * 1000)
    return statistics.median(times)


def _changed(snapshot: Snapshot, every: int) -> Snapshot:
    """The snapshot with every `every`-th node's state a new (equal) object."""
    nodes = [n.model_copy() if i % every == 0 else n for i, n in enumerate(snapshot.nodes)]
    return snapshot.model_copy(update={"nodes": nodes})


def _renamed(sample: Sample, day: int, at: datetime) -> Sample:
    """The sample with every pod replaced by a new one (new owners, new holders)."""
    return replace(
        sample,
        at=at,
        holdings=tuple(replace(h, owner=f"{h.owner}-d{day}") for h in sample.holdings),
        holds=tuple(replace(h, pod=f"{h.pod}-d{day}") for h in sample.holds),
    )


def held_cluster(nodes: int) -> Snapshot:
    """The page benchmarks' cluster with each holder a running pod of its node."""
    snapshot = big_cluster(nodes)
    return snapshot.model_copy(
        update={
            "nodes": [
                node.model_copy(
                    update={
                        "pods": [
                            PodSlots(
                                pod=h.pod,
                                uid=f"uid-{h.pod}",
                                phase="Running",
                                slots=h.slots,
                                resource="nvidia.com/gpu",
                            )
                            for gpu in node.gpus
                            for h in gpu.holders
                        ]
                    }
                )
                for node in snapshot.nodes
            ]
        }
    )


def measure(nodes: int, *, month: bool = True) -> None:
    """Print the sample's cost and the file's growth, then (with `month`) the query times."""
    snapshot = held_cluster(nodes)
    cpu = time.thread_time  # a sample's cost is the CPU time it takes, as the sampler counts
    full_ms = _ms(lambda: Sampler().sample(snapshot, [], at=END), 1, clock=cpu)
    sampler = Sampler()
    sample = sampler.sample(snapshot, [], at=END)
    changed = [_changed(snapshot, 100) for _ in range(3)]
    take_ms = _ms(lambda: sampler.sample(changed.pop(), [], at=END), 3, clock=cpu)
    keys = len(sample.holdings) + len(sample.holds) + len(sample.gpus)
    with tempfile.TemporaryDirectory(prefix="history-bench-") as folder:
        store = HistoryStore(Path(folder) / "h.sqlite")
        started = cpu()
        store.add(sample, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
        first_ms = (cpu() - started) * 1000
        first_mib = store.page_count() * 4096 / 2**20
        moments = iter(range(1, 10_000))

        changes = iter([_changed(snapshot, 100) for _ in range(8)])

        def write() -> None:
            at = END + timedelta(seconds=INTERVAL_S * next(moments))
            taken = sampler.sample(next(changes), [], at=at)
            started = cpu()
            store.add(taken, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
            times.append((cpu() - started) * 1000)

        times: list[float] = []
        for _ in range(8):
            write()
        write_ms, steady_ms = statistics.mean(times), statistics.median(times)
        steady_mib = store.page_count() * 4096 / 2**20 - first_mib
        store.close()
    share_pct = (take_ms + write_ms) / (INTERVAL_S * 1000) * 100
    print(
        f"history, {nodes:,} nodes ({keys:,} keys a sample): a sample's CPU time "
        f"{take_ms:,.0f} ms to take + {write_ms:,.0f} ms to write (median {steady_ms:,.0f} ms) "
        f"= {share_pct:.1f} % of a core at {INTERVAL_S:.0f} s "
        f"(1 % of the nodes changed; the sampler stretches its interval to keep under 5 %; the "
        f"first sample, every span new: {full_ms:,.0f} ms to take + {first_ms:,.0f} ms to "
        f"write); file: {first_mib:,.1f} MiB after the first sample, "
        f"+{steady_mib:,.2f} MiB over 8 samples",
        flush=True,
    )
    if not month:
        return
    with tempfile.TemporaryDirectory(prefix="history-bench-") as folder:
        store = HistoryStore(Path(folder) / "h.sqlite")
        start = END - timedelta(days=30)
        for day in range(30):  # a sample a day standing for the day: every pod replaced daily
            at = start + timedelta(days=day)
            store.add(_renamed(sample, day, at), span_s=86_400, retention_days=RETENTION_DAYS)
        queries = {}
        for days in (7, 30):

            def query(days: int = days) -> None:
                window = ((END - timedelta(days=days)).timestamp(), END.timestamp())
                held, physical_s = store.held(*window, by="namespace")
                result = showback(held, "namespace", physical_gpu_s=physical_s)
                assert result.rows and result.gpu_hours <= result.physical_gpu_hours

            queries[days] = _ms(query, 3, clock=cpu)
        size_mib = store.page_count() * 4096 / 2**20
        store.close()
    print(
        f"history, {nodes:,} nodes, every pod replaced daily: about {size_mib / 30:,.1f} MiB a "
        f"day; showback over 7 days {queries[7]:,.0f} ms, 30 days {queries[30]:,.0f} ms of "
        f"CPU ({size_mib:,.0f} MiB file)",
        flush=True,
    )


def main(argv: list[str]) -> int:
    month = "--no-month" not in argv
    for nodes in [int(a) for a in argv if a != "--no-month"] or [1_000]:
        measure(nodes, month=month)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
