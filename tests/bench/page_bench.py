"""Overview render time for a big cluster: `python -m tests.bench.page_bench [nodes]`.

Renders the overview fragment of a hand-built snapshot (8 GPUs x 8 slots per node) with
a cold memo, as the first page view after each new snapshot does, then once from the memo.
"""

from __future__ import annotations

import statistics
import sys
import time

from app.web.services.fragments import overview_fragment
from tests.web.page_snapshots import big_cluster, page_app


def main(argv: list[str]) -> int:
    nodes = int(argv[0]) if argv else 500
    rounds = int(argv[1]) if len(argv) > 1 else 5
    snapshot = big_cluster(nodes)
    _, runtime = page_app(snapshot)
    overview_fragment(runtime.pages, "en")  # compile the templates
    cold_ms: list[float] = []
    size = 0
    for _ in range(rounds):
        runtime.snapshots.set(snapshot)
        started = time.perf_counter()
        size = len(overview_fragment(runtime.pages, "en"))
        cold_ms.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    overview_fragment(runtime.pages, "en")
    warm_ms = (time.perf_counter() - started) * 1000
    gpus = sum(len(node.gpus) for node in snapshot.nodes)
    print(
        f"overview, {nodes} nodes / {gpus} GPUs: {statistics.median(cold_ms):.0f} ms per render "
        f"(median of {rounds}, min {min(cold_ms):.0f} ms), {size / 1e6:.1f} MB of HTML; "
        f"memoised: {warm_ms:.3f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
