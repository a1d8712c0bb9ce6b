"""The engine alone on the benchmark cluster: `build_snapshot` and the JSON bodies, timed.

    python -m tests.bench.engine_bench [--nodes 1000] [--runs 3] [--profile]

The cluster comes from the simulator loaded in this process (no HTTP), with one agent
report per node; `--profile` prints the top of a cProfile of one build.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import pstats
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo
from app.domain.report import AgentReport, ReceivedReport
from app.gc_policy import freeze_listed
from app.simulator.apiserver.resources import DAEMONSET, NODE, POD
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


def _bump(obj: dict[str, Any], version: int) -> dict[str, Any]:
    """A copy of a manifest with a new resourceVersion, as a watch event would bring it."""
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = str(version)
    return new


def check_memo(state: ClusterState) -> None:
    """Changes of every kind between builds: each memo build must equal a plain build."""
    options = AccountingOptions()
    memo = EngineMemo()
    now = datetime.now(UTC)
    version = 10_000_000
    rng = random.Random(7)

    def compare(what: str, current: ClusterState, at: datetime) -> None:
        with_memo = build_snapshot(current, options=options, now=at, memo=memo)
        plain = build_snapshot(current, options=options, now=at)
        assert with_memo == plain, f"memo differs after: {what}"
        index = memo.pod_index.incremental if memo.pod_index is not None else 0
        print(f"  same snapshot after {what} (nodes reused: {memo.reused}, index updated: {index})")

    compare("the first build", state, now)
    compare("nothing changed, 5 s later", state, now + timedelta(seconds=5))
    pods = list(state.pods)
    # a GPU pod finishes (Succeeded): its slot is free again
    index = next(i for i, p in enumerate(pods) if p["metadata"]["name"].startswith("train-"))
    version += 1
    pods[index] = _bump(pods[index], version)
    pods[index]["status"]["phase"] = "Succeeded"
    state = replace(state, pods=pods)
    compare("a GPU pod finished", state, now + timedelta(seconds=6))
    # a pod named by a GPU process is deleted
    uid = next(
        proc.pod_uid
        for received in state.reports.values()
        for gpu in received.report.gpus
        for proc in gpu.processes
        if proc.pod_uid
    )
    state = replace(state, pods=[p for p in state.pods if p["metadata"].get("uid") != uid])
    compare("a pod with a GPU process was deleted", state, now + timedelta(seconds=7))
    # a new GPU pod, still Pending, then bound to a node (only that node's pods change)
    created = copy.deepcopy(
        next(p for p in state.pods if p["metadata"]["name"].startswith("train-"))
    )
    version += 1
    created["metadata"].update(name="train-new", uid="uid-train-new", resourceVersion=str(version))
    del created["spec"]["nodeName"]
    created["status"] = {"phase": "Pending"}
    state = replace(state, pods=[*state.pods, created])
    compare("a pending GPU pod was created", state, now + timedelta(seconds=7))
    pods = list(state.pods)
    version += 1
    pods[-1] = _bump(pods[-1], version)
    pods[-1]["spec"]["nodeName"] = state.nodes[5]["metadata"]["name"]
    pods[-1]["status"]["phase"] = "Running"
    state = replace(state, pods=pods)
    compare("the pending pod was bound to a node", state, now + timedelta(seconds=7))
    # the plugin's own pod on a node restarts (its pods are indexed afresh)
    pods = list(state.pods)
    index = next(i for i, p in enumerate(pods) if p["metadata"]["namespace"] == "kube-system")
    version += 1
    pods[index] = _bump(pods[index], version)
    pods[index]["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"
    state = replace(state, pods=pods)
    compare("a plugin pod was replaced", state, now + timedelta(seconds=7))
    # a pod sets NVIDIA_VISIBLE_DEVICES (pod finding) on a node
    pods = list(state.pods)
    index = rng.randrange(len(pods))
    version += 1
    pods[index] = _bump(pods[index], version)
    pods[index]["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}]
    state = replace(state, pods=pods)
    compare("a pod set NVIDIA_VISIBLE_DEVICES", state, now + timedelta(seconds=8))
    # a node's allocatable drops (an unhealthy GPU)
    nodes = list(state.nodes)
    version += 1
    nodes[3] = _bump(nodes[3], version)
    nodes[3]["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    state = replace(state, nodes=nodes)
    compare("a node's allocatable changed", state, now + timedelta(seconds=9))
    # new agent reports: one adds a host process, one drops a pod process
    reports = dict(state.reports)
    for name in rng.sample(sorted(reports), 3):
        body = reports[name].report.model_dump(mode="json", by_alias=True)
        body["gpus"][0]["processes"].append({"pid": 7, "used_memory_mib": 4096, "user": "eve"})
        body["gpus"][1]["processes"] = []
        reports[name] = ReceivedReport(
            report=AgentReport.model_validate(body), received_at=now + timedelta(seconds=10)
        )
    state = replace(state, reports=reports)
    compare("three new agent reports", state, now + timedelta(seconds=10))
    # the plugin DaemonSet changes (a new image): every node is recomputed
    assert state.daemonset is not None
    version += 1
    daemonset = _bump(state.daemonset, version)
    daemonset["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    )
    state = replace(state, daemonset=daemonset)
    compare("the plugin image changed", state, now + timedelta(seconds=11))
    # time passes: every agent report goes stale, then one node reports again
    later = now + timedelta(seconds=200)
    compare("every agent report went stale", state, later)
    reports = dict(state.reports)
    name = sorted(reports)[0]
    reports[name] = ReceivedReport(report=reports[name].report, received_at=later)
    state = replace(state, reports=reports)
    compare("one stale node reported again", state, later + timedelta(seconds=1))
    # a node disappears
    state = replace(state, nodes=list(state.nodes)[1:])
    compare("a node was deleted", state, later + timedelta(seconds=2))
    assert memo.pod_index is not None and memo.pod_index.incremental >= 5, "index rebuilt"


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
    parser.add_argument(
        "--check", action="store_true", help="compare memo builds with plain ones under changes"
    )
    args = parser.parse_args(argv)
    state = cluster_state(args.nodes)
    if args.check:
        check_memo(state)
        return 0
    if not args.no_freeze:
        freeze_listed()  # what the dashboard's cache does after a big list
    options = AccountingOptions()
    memo = None if args.no_memo else EngineMemo()
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
    from app.domain.accounting.free_gpus import free_by_model
    from app.web.routes.api import summary_of
    from app.web.views.schemas import NodesOut

    started = time.perf_counter()
    nodes_body = NodesOut(
        generated_at=snapshot.generated_at, stale=snapshot.stale, nodes=snapshot.nodes
    ).model_dump_json()
    nodes_s = time.perf_counter() - started
    started = time.perf_counter()
    summary_of(snapshot, free=free_by_model(snapshot.nodes)).model_dump_json()
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
