"""The engine alone on the benchmark cluster: `build_snapshot` and the JSON bodies, timed.

    python -m tests.bench.engine_bench [--nodes 1000] [--runs 3] [--profile]

The cluster comes from the simulator loaded in this process (no HTTP), with one agent
report per node; `--profile` prints the top of a cProfile of one build.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time
from datetime import UTC, datetime

from app.domain.accounting import build_snapshot
from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.pods import PodMemo
from app.domain.report import AgentReport, ReceivedReport
from app.kube.cache import settle
from app.simulator.resources import DAEMONSET, NODE, POD
from tests.bench import cluster_gen, simserver


def cluster_state(nodes: int) -> ClusterState:
    sim = simserver.load(nodes)
    pods = sim.store.objects(POD)
    uids = {(p["metadata"]["namespace"], p["metadata"]["name"]): p["metadata"]["uid"] for p in pods}
    now = datetime.now(UTC)
    reports = {
        body["node"]: ReceivedReport(report=AgentReport.model_validate(body), received_at=now)
        for body in cluster_gen.iter_reports(nodes, uids, collected_at=now)
    }
    return ClusterState(
        daemonset=sim.store.objects(DAEMONSET)[0],
        configmaps={},
        nodes=sim.store.objects(NODE),
        pods=pods,
        reports=reports,
    )


def _gc_timer() -> list[float]:
    """Seconds spent in each full (generation 2) collection from now on."""
    spent: list[float] = []
    started = [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent.append(time.perf_counter() - started[0])

    gc.callbacks.append(callback)
    return spent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-memo", action="store_true", help="without the engine's pod memo")
    parser.add_argument("--no-freeze", action="store_true", help="leave the manifests to the GC")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    state = cluster_state(args.nodes)
    if not args.no_freeze:
        settle()  # what the dashboard's cache does after a big list
    options = AccountingOptions()
    memo = None if args.no_memo else PodMemo()
    spent_gc = _gc_timer()
    times, cpu = [], []
    snapshot = None
    for _ in range(args.runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        snapshot = build_snapshot(state, options=options, now=datetime.now(UTC), memo=memo)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    assert snapshot is not None
    if memo is not None:
        plain = build_snapshot(state, options=options, now=snapshot.generated_at)
        assert plain == snapshot, "the memo changed the snapshot"
    from app.web.api import summary_of
    from app.web.schemas import NodesOut

    started = time.perf_counter()
    nodes_body = NodesOut(
        generated_at=snapshot.generated_at, stale=snapshot.stale, nodes=snapshot.nodes
    ).model_dump_json()
    nodes_s = time.perf_counter() - started
    started = time.perf_counter()
    summary_of(snapshot).model_dump_json()
    summary_s = time.perf_counter() - started
    print(
        f"{args.nodes} nodes, {len(state.pods)} pods (memo {memo is not None}, frozen "
        f"{not args.no_freeze}): build_snapshot wall median {statistics.median(times):.3f} s, "
        f"CPU min {min(cpu):.3f} s over {args.runs} runs; full GCs {len(spent_gc)} taking "
        f"{sum(spent_gc):.2f} s; /api/v1/nodes body {len(nodes_body) / 1e6:.1f} MB in "
        f"{nodes_s * 1000:.0f} ms; summary {summary_s * 1000:.2f} ms; "
        f"findings {len(snapshot.findings)}"
    )
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        build_snapshot(state, options=options, now=datetime.now(UTC), memo=memo)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
