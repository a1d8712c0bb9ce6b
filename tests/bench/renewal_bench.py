"""Agents renewing at the chart's interval, in process: what the builds and the intake cost.

    python -m tests.bench.renewal_bench [--nodes 2000] [--seconds 30]

The dashboard's runtime (`create_app`, its snapshot loop running, the 5 s periodic build of
`gpu-slots serve`) over the benchmark cluster held in memory (the simulator's objects, no
API server, no HTTP). Every node's agent posts a first report; then, every tenth of a
second, a tenth of the reports due (nodes / 15 s: the chart's `agent.interval`) post the
readings of the node's previous report with a newer time (a quiet cluster), through the
intake as the report route does. Printed: builds a second, the snapshot threads' CPU
seconds per wall second, the intake's CPU per renewed report, and then (the loop stopped)
the CPU of rendering the unpaged node list for a new snapshot. CPU, not wall time, is the
figure on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from datetime import UTC, datetime

from fastapi.testclient import TestClient

from app.gc_policy import freeze_listed
from app.simulator.apiserver.resources import DAEMONSET, NODE, POD
from app.simulator.world.cluster import SimulatedCluster
from app.web.app import create_app
from app.web.runtime import Runtime
from tests.bench import cluster_gen, simserver
from tests.conftest import stack_settings
from tests.web.fakes import FakeSource

INTERVAL_S = 15.0  # the chart's agent.interval
TICK_S = 0.1


def _thread_cpu_s(names: tuple[str, ...]) -> float:
    """CPU seconds the named threads have used so far (Linux thread clocks)."""
    total = 0.0
    for thread in threading.enumerate():
        if thread.name in names and thread.ident is not None:
            total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return total


def _bodies(sim: SimulatedCluster, nodes: int, at: datetime) -> list[bytes]:
    pods = sim.store.objects(POD)
    uids = {(p["metadata"]["namespace"], p["metadata"]["name"]): p["metadata"]["uid"] for p in pods}
    return [json.dumps(b).encode() for b in cluster_gen.iter_reports(nodes, uids, collected_at=at)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sim = simserver.load(args.nodes)
    source = FakeSource(
        nodes=sim.store.objects(NODE),
        pods=sim.store.objects(POD),
        daemonsets=sim.store.objects(DAEMONSET),
    )
    freeze_listed()
    app = create_app(stack_settings(snapshot_min_interval_s=0.1), source=source)
    runtime: Runtime = app.state.runtime
    first_at = datetime.now(UTC).replace(microsecond=0)
    stamp = first_at.isoformat().encode()
    bodies = _bodies(sim, args.nodes, first_at)
    runtime.snapshots.start()
    for body in bodies:
        runtime.intake.take(body, token_node=None, client="bench")
    while runtime.snapshots.builds < 2 or len(runtime.reports) != args.nodes:
        time.sleep(0.1)
    time.sleep(6.0)  # the first reports' builds done, one periodic build past
    print(f"{args.nodes} nodes loaded and built in {time.perf_counter() - started:.0f} s")

    threads = ("snapshots", "snapshot-renders")
    per_tick = args.nodes / INTERVAL_S * TICK_S
    builds, cpu = runtime.snapshots.builds, _thread_cpu_s(threads)
    wall, intake_cpu, renewed, due, node = time.monotonic(), 0.0, 0, 0.0, 0
    outcomes: dict[str, int] = {}
    while time.monotonic() - wall < args.seconds:
        due += per_tick
        at = datetime.now(UTC).isoformat().encode()
        while renewed < int(due):
            body = bodies[node].replace(stamp, at, 1)
            node = (node + 1) % args.nodes
            spent = time.thread_time()
            taken = runtime.intake.take(body, token_node=None, client="bench")
            intake_cpu += time.thread_time() - spent
            outcomes[taken.outcome.value] = outcomes.get(taken.outcome.value, 0) + 1
            renewed += 1
        time.sleep(max(0.0, wall + due / per_tick * TICK_S - time.monotonic()))
    wall_s = time.monotonic() - wall
    builds, cpu = runtime.snapshots.builds - builds, _thread_cpu_s(threads) - cpu
    runtime.snapshots.stop()
    list_cpu = []
    client = TestClient(app)  # no lifespan: nothing else runs
    for _ in range(3):
        runtime.snapshots.rebuild()  # a new snapshot: its unpaged list is rendered anew
        spent = time.process_time()
        assert client.get("/api/v1/nodes").status_code == 200
        list_cpu.append(time.process_time() - spent)
    print(
        f"{args.nodes} nodes, {wall_s:.0f} s, {renewed} reports ({outcomes}, "
        f"{renewed / wall_s:.0f}/s): {builds} builds ({builds / wall_s:.2f}/s), snapshot "
        f"threads {cpu:.2f} s CPU = {cpu / wall_s:.3f} CPU s per wall s "
        f"({cpu / max(builds, 1) * 1000:.0f} ms a build); intake "
        f"{intake_cpu / max(renewed, 1) * 1e6:.0f} us CPU per report; the unpaged "
        f"/api/v1/nodes rendered in {min(list_cpu) * 1000:.0f} ms CPU (best of 3)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
