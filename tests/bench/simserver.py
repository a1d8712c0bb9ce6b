"""The benchmark's simulated API server, in its own process.

Run: `python -m tests.bench.simserver --nodes N [--port P]`. Prints one JSON line
(`{"url": ..., "load_s": ...}`) once it serves, then runs until stdin closes.

The cluster is loaded in three steps so that the simulator's DaemonSet controller runs
over the nodes once, before the 29 workload pods per node exist: nodes (no DaemonSet),
then the plugin DaemonSet (the controller creates one plugin pod per node), then the
workload pods through `create_pod`. Loading everything through one scenario makes the
controller scan every pod once per node, twice (quadratic; see docs/PERFORMANCE.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from app.simulator.apiserver.resources import DAEMONSET
from app.simulator.world.cluster import SimulatedCluster
from tests.bench import cluster_gen


def load(nodes: int) -> SimulatedCluster:
    """A simulated cluster holding the benchmark cluster of `nodes` nodes (not started)."""
    full = cluster_gen.scenario(nodes)
    pods = [o for o in full.objects if o["kind"] == "Pod"]
    daemonsets = [o for o in full.objects if o["kind"] == "DaemonSet"]
    full.objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i:02d}"}}
        for i in range(cluster_gen.NAMESPACES)
    ]
    sim = SimulatedCluster(full)
    for daemonset in daemonsets:
        sim.registry.create(DAEMONSET, daemonset["metadata"]["namespace"], daemonset)
    for pod in pods:
        sim.create_pod(pod)
    return sim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    sim = load(args.nodes)
    load_s = time.perf_counter() - started
    url = sim.start(port=args.port)
    print(json.dumps({"url": url, "load_s": round(load_s, 2)}), flush=True)
    try:
        sys.stdin.read()  # until the benchmark closes our stdin (or dies)
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
