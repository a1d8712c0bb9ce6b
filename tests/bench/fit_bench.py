"""The fit check's cost on a big cluster: `python -m tests.bench.fit_bench [nodes...]`.

Asks `fit_answer` about a one-GPU pod over a hand-built snapshot (8 GPUs x 8 time-sliced
slots per node, every node fitting, so each names its likely GPUs: the costliest answer),
then the whole `POST /api/v1/fit` through the ASGI app (the body read, the answer made
and serialised). Prints p50 and p99 per size; `make bench` runs it at 1,000 and 10,000.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.domain.fit.check import fit_answer
from app.domain.fit.manifest import read_ask
from app.domain.fit.placement import CandidateMemo
from app.domain.snapshot import ResourceState, Snapshot
from app.gc_policy import freeze_listed
from app.web.routes import fit
from tests.web.page_snapshots import big_cluster, page_app

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "ask", "namespace": "ml"},
    "spec": {
        "containers": [
            {"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ]
    },
}


def percentiles(run: Callable[[], object], rounds: int) -> tuple[float, float]:
    """p50 and p99 of `rounds` runs, in ms."""
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    return statistics.median(spent), spent[min(len(spent) - 1, round(len(spent) * 0.99))]


def fitting_cluster(nodes: int) -> Snapshot:
    """big_cluster() with each node's resources as the engine states them (all fit)."""
    snapshot = big_cluster(nodes)
    states = [
        node.model_copy(
            update={
                "resources": {
                    "nvidia.com/gpu": ResourceState(
                        allocatable=node.allocatable or 0,
                        requested=node.requested,
                        free=node.free or 0,
                        stranded=0,
                    )
                }
            }
        )
        for node in snapshot.nodes
    ]
    totals = ResourceState(allocatable=1, requested=0, free=1, stranded=0)
    return snapshot.model_copy(update={"nodes": states, "resources": {"nvidia.com/gpu": totals}})


def measure(nodes: int, *, rounds: int = 50) -> str:
    snapshot = fitting_cluster(nodes)
    freeze_listed()  # the collector as the dashboard sets it: what is kept frozen, threshold raised
    ask = read_ask(POD)
    cold = percentiles(lambda: fit_answer(snapshot, ask), max(rounds // 5, 3))
    memo = CandidateMemo()
    domain = percentiles(lambda: fit_answer(snapshot, ask, memo=memo), rounds)
    app: FastAPI
    app, runtime = page_app(snapshot)
    runtime.fit_memo = CandidateMemo()  # type: ignore[attr-defined]  # the Runtime's field
    app.include_router(fit.api_router)
    with TestClient(app) as client:

        def post() -> None:
            answer = client.post("/api/v1/fit", json=POD)
            assert answer.status_code == 200, answer.text

        post()
        http = percentiles(post, rounds)
    return (
        f"fit check, {nodes:,} nodes: fit_answer p50 {domain[0]:.1f} ms / p99 {domain[1]:.1f} ms "
        f"(no node state kept: p50 {cold[0]:.1f} ms); "
        f"POST /api/v1/fit p50 {http[0]:.1f} ms / p99 {http[1]:.1f} ms"
    )


def main(argv: list[str]) -> int:
    for nodes in [int(a) for a in argv] or [1_000, 10_000]:
        print(measure(nodes), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
