"""A dashboard's history store in a process of its own, driven line by line (the tests of one
writer per file): `python -m tests.web.history_replica <file>`, then on stdin
`add <seconds>` keeps the sample at T0 + seconds standing for a minute, answered `kept` or
`read <writer>` (another process writes the file); `held <start_s> <end_s>` answers the
window's figures (`figures`) as one JSON line. Killing the process is a replica ending."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.domain.history.sample import GpuSeen, Holding, Sample
from app.web.services.history.store import HistoryStore

T0 = datetime(2026, 11, 1, tzinfo=UTC)
SPAN_S = 60.0
RELABELLED_S = 3565.0  # from then on, ml/carol's pod has a new owner (a new key)


def replica_sample(seconds: float) -> Sample:
    """gpu-1, 4 GPUs time-sliced in 4: ml/carol holds a quarter GPU and runs on it (its owner
    ml/carol-2 from RELABELLED_S on), serving/infer holds half a GPU and runs nothing."""
    carol = "ml/carol" if seconds < RELABELLED_S else "ml/carol-2"
    holdings = (
        Holding("ml", carol, "gpu-1", 0.25, 0.25, 0.0, (("nvidia.com/gpu", 1),)),
        Holding("serving", "serving/infer", "gpu-1", 0.5, 0.0, 0.5, (("nvidia.com/gpu", 2),)),
    )
    gpus = tuple(
        GpuSeen("gpu-1", f"GPU-{i}", i, 50, mode="time-slicing", replicas=4, config="cm#ts4")
        for i in range(4)
    )
    return Sample(T0 + timedelta(seconds=seconds), holdings, (), gpus)


def figures(store: HistoryStore, start_s: float, end_s: float) -> dict[str, list[float]]:
    """Per owner its GPU-, used and idle share-seconds inside the window, and the physical
    GPU-seconds ("physical"); the window in seconds from T0."""
    base = T0.timestamp()
    held, physical_s = store.held(base + start_s, base + end_s, by="owner")
    rows = {item.owner: [item.share_s, item.used_s, item.idle_s] for item in held}
    return rows | {"physical": [physical_s]}


def main(path: str) -> None:
    store = HistoryStore(Path(path))
    print("ready", flush=True)
    for line in sys.stdin:
        command, *numbers = line.split()
        if command == "add":
            sample = replica_sample(float(numbers[0]))
            kept = store.add(sample, span_s=SPAN_S, retention_days=35)
            print("kept" if kept else f"read {store.writer_elsewhere()}", flush=True)
        else:
            print(json.dumps(figures(store, *map(float, numbers))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
