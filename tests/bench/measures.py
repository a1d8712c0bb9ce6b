"""One benchmark scale: start the simulator and the dashboard, measure every figure, stop."""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.bench import cluster_gen, kubectl_way, load, paging, procs
from tests.bench.forked import in_child
from tests.bench.load import LoadResult

GZIP = ("Accept-Encoding: gzip",)
# (name in the results, path, request headers): /healthz is the ceiling of the process.
LOADS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("/healthz", "/healthz", ()),
    ("/api/v1/summary", "/api/v1/summary", ()),
    ("/api/v1/nodes?limit=100", paging.PAGE_PATH, ()),
    ("/", "/", ()),
    ("/ gzip", "/", GZIP),
)
REPLICAS_UP_TO = 1000  # the two-replica setup runs at these sizes (memory x2 above)
CHANGE_NODE = 1  # gpu-0001: no host process of its own, so a report can add one
AGENT_INTERVAL_S = 15.0  # the chart's agent.interval


@dataclass
class Settings:
    load_s: float = 10.0  # seconds of load per endpoint
    connections: int = 16
    kubectl_runs: int = 3
    changes: int = 3  # pod changes and report changes, each
    min_reports: int = 3000  # reports posted for the ingestion rate (whole rounds)
    engine_runs: int = 3
    log_dir: Path = Path("/tmp")


@dataclass
class ScaleResult:
    nodes: int
    pods: int = 0
    gpu_pods: int = 0
    sim_load_s: float = math.nan
    startup_s: float = math.nan
    reports_complete_s: float = math.nan
    engine_s: float = math.nan
    loads: dict[str, LoadResult] = field(default_factory=dict)
    body_bytes: dict[str, int] = field(default_factory=dict)
    kubectl: kubectl_way.KubectlWay | None = None
    pod_change_s: list[float] = field(default_factory=list)
    report_change_s: list[float] = field(default_factory=list)
    ingest: dict[str, Any] = field(default_factory=dict)
    background: dict[str, Any] = field(default_factory=dict)  # the agents during the loads
    replica_ready_s: float = math.nan  # a second replica: spawn -> ready with every report
    replicas_agree: bool | None = None
    rss_kib: int = -1
    hwm_kib: int = -1
    agreed: bool | None = None  # the kubectl way and the dashboard give the same totals
    walk_s: float = math.nan  # every node through `continue`, pages of paging.WALK_LIMIT
    whole_s: float = math.nan  # the unpaged list, one request
    notes: list[str] = field(default_factory=list)


def _summary(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/api/v1/summary")
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


def _ready_with_all_nodes(client: httpx.Client, nodes: int) -> bool:
    if client.get("/readyz").status_code != 200:
        return False
    return bool(_summary(client)["totals"]["allocatable"] == nodes * cluster_gen.GPUS_PER_NODE)


def _gpu_pod_uids(sim_url: str) -> dict[tuple[str, str], str]:
    response = httpx.get(
        f"{sim_url}/api/v1/pods", params={"labelSelector": "app=train"}, timeout=120
    )
    response.raise_for_status()
    return {
        (p["metadata"]["namespace"], p["metadata"]["name"]): p["metadata"]["uid"]
        for p in response.json()["items"]
    }


def _bodies(
    nodes: int,
    uids: dict[tuple[str, str], str],
    *,
    at: datetime,
    rounds: int = 1,
    skip: int | None = None,
) -> Iterator[bytes]:
    """`rounds` reports of every node (but `skip`), one second newer each round."""
    for round_index in range(rounds):
        moment = at + timedelta(seconds=round_index)
        for index in range(nodes):
            if index != skip:
                body = cluster_gen.report_body(index, uids, collected_at=moment)
                yield json.dumps(body, separators=(",", ":")).encode()


def run_scale(nodes: int, settings: Settings) -> ScaleResult:
    result = ScaleResult(nodes=nodes)
    result.pods = nodes * cluster_gen.PODS_PER_NODE
    result.gpu_pods = nodes * cluster_gen.GPU_PODS_PER_NODE
    sim = procs.start_simulator(nodes, log=settings.log_dir / f"bench-sim-{nodes}.log")
    dash = None
    try:
        result.sim_load_s = sim.load_s
        dash = procs.start_dashboard(sim.url, log=settings.log_dir / f"bench-dash-{nodes}.log")
        with httpx.Client(base_url=dash.url, timeout=120) as client:
            _measure(result, settings, sim.url, dash, client)
    finally:
        procs.stop(dash.process if dash else None)
        procs.stop(sim.process)
    return result


def _measure(
    result: ScaleResult,
    settings: Settings,
    sim_url: str,
    dash: procs.Dashboard,
    client: httpx.Client,
) -> None:
    nodes = result.nodes
    ready_at = procs.poll(
        lambda: _ready_with_all_nodes(client, nodes),
        timeout_s=300,
        interval_s=0.05,
        what="the first complete snapshot",
    )
    result.startup_s = ready_at - dash.started_at
    _log(f"  {nodes} nodes: first complete snapshot after {result.startup_s:.2f} s")

    uids = _gpu_pod_uids(sim_url)
    now = datetime.now(UTC)
    first = list(_bodies(nodes, uids, at=now))
    posted_at = time.perf_counter()
    load.post_reports(dash.url, first, token=procs.AGENT_TOKEN, connections=settings.connections)
    gpus = nodes * cluster_gen.GPUS_PER_NODE
    complete_at = procs.poll(
        lambda: _summary(client)["totals"]["physical_gpus"] == gpus,
        timeout_s=300,
        what="a snapshot with every agent report",
    )
    result.reports_complete_s = complete_at - posted_at
    _log(f"  every report in the snapshot {result.reports_complete_s:.2f} s after the first POST")

    rounds = max(1, math.ceil(settings.min_reports / nodes))
    more = list(_bodies(nodes, uids, at=now + timedelta(seconds=1), rounds=rounds))
    result.ingest = load.post_reports(
        dash.url, more, token=procs.AGENT_TOKEN, connections=settings.connections
    )
    _log(f"  ingestion: {result.ingest}")
    last_round = [json.loads(b) for b in more[-nodes:]]

    result.engine_s = in_child(_engine_seconds, sim_url, last_round, runs=settings.engine_runs)
    _log(f"  engine build_snapshot: {result.engine_s:.3f} s")

    # From here on every other node's agent reports every AGENT_INTERVAL_S, as in production.
    rate = (nodes - 1) / AGENT_INTERVAL_S
    span_s = settings.load_s * len(LOADS) + 20 * settings.changes + 30
    rounds_bg = math.ceil(span_s / AGENT_INTERVAL_S) + 1
    stamp = now + timedelta(seconds=rounds + 1)
    background = _bodies(nodes, uids, at=stamp, rounds=rounds_bg, skip=CHANGE_NODE)
    agents = load.BackgroundAgents(
        dash.url,
        background,
        token=procs.AGENT_TOKEN,
        rate=rate,
        connections=max(4, min(64, int(rate))),  # none idle past the server's keep-alive
    )
    try:
        for name, path, headers in LOADS:
            sample = client.get(
                path,
                headers={"Accept-Encoding": "identity", **dict(h.split(": ", 1) for h in headers)},
            )
            result.body_bytes[name] = sample.num_bytes_downloaded
            result.loads[name] = load.get_load(
                dash.url,
                path,
                connections=settings.connections,
                duration_s=settings.load_s,
                headers=headers,
            )
            _log(f"  {name}: {result.loads[name]}")
        result.walk_s, listed, pages = paging.walk_all(client)
        result.whole_s, result.body_bytes["/api/v1/nodes"] = paging.whole_list(client)
        _log(f"  every node through continue: {result.walk_s:.2f} s ({listed} in {pages} pages)")
        _log(f"  the whole list: {result.whole_s:.2f} s, {result.body_bytes['/api/v1/nodes']} B")
        result.pod_change_s = _pod_changes(sim_url, client, count=settings.changes)
        _log(f"  pod change -> snapshot: {result.pod_change_s}")
        result.report_change_s = _report_changes(
            dash.url,
            client,
            uids,
            start=stamp + timedelta(seconds=rounds_bg),
            count=settings.changes,
        )
        _log(f"  report -> snapshot: {result.report_change_s}")
        if nodes <= REPLICAS_UP_TO:
            later = stamp + timedelta(seconds=rounds_bg + 2 * settings.changes + 1)
            second_replica(result, settings, sim_url, dash, client, uids, at=later)
    finally:
        result.background = agents.stop()
    _log(f"  background agents: {result.background}")
    result.rss_kib = dash.rss_kib()
    result.hwm_kib = dash.hwm_kib()

    if kubectl_way.available() and settings.kubectl_runs > 0:
        result.kubectl = in_child(kubectl_way.measure, sim_url, runs=settings.kubectl_runs)
        summary = _summary(client)["totals"]
        result.agreed = (
            result.kubectl.allocatable == summary["allocatable"]
            and result.kubectl.requested == summary["requested"]
        )
        _log(f"  kubectl: {result.kubectl} (same totals as the dashboard: {result.agreed})")
    else:
        result.notes.append("kubectl not installed: the kubectl way was not timed")


def second_replica(
    result: ScaleResult,
    settings: Settings,
    sim_url: str,
    first: procs.Dashboard,
    client: httpx.Client,
    uids: dict[tuple[str, str], str],
    *,
    at: datetime,
) -> None:
    """Start a second replica that asks the first for its reports (as after a restart);
    time until it is ready and counts every node's GPUs; then one round of reports to both
    and compare their answers."""
    log = settings.log_dir / f"bench-dash-{result.nodes}-replica.log"
    env = {"GEO_MLOPS_PEERS": first.url, "GEO_MLOPS_REPORT_WAIT_S": "120"}
    second = procs.start_dashboard(sim_url, log=log, env_extra=env)
    gpus = result.nodes * cluster_gen.GPUS_PER_NODE
    try:
        with httpx.Client(base_url=second.url, timeout=120) as other:
            ready_at = procs.poll(
                lambda: (
                    other.get("/readyz").status_code == 200
                    and _summary(other)["totals"]["physical_gpus"] == gpus
                ),
                timeout_s=300,
                interval_s=0.05,
                what="the second replica ready with every report",
            )
            result.replica_ready_s = ready_at - second.started_at
            how = other.get("/readyz").json().get("reports")
            _log(f"  second replica ready after {result.replica_ready_s:.2f} s ({how})")
            bodies = list(_bodies(result.nodes, uids, at=at))
            for url in (first.url, second.url):
                load.post_reports(url, bodies, token=procs.AGENT_TOKEN, connections=4)
            last = json.loads(bodies[-1])["collected_at"]

            def answers(c: httpx.Client) -> tuple[object, object]:
                nodes = c.get("/api/v1/nodes").json()["nodes"]
                newest = max((n["agent"] or {}).get("collected_at", "") for n in nodes)
                summary = _summary(c)
                return newest[:19], (summary["totals"], summary["findings"])

            def agree() -> bool:
                mine, theirs = answers(client), answers(other)
                return mine[0] == theirs[0] == last[:19] and mine[1] == theirs[1]

            try:
                procs.poll(agree, timeout_s=60, interval_s=0.2, what="the replicas to agree")
                result.replicas_agree = True
            except TimeoutError:
                result.replicas_agree = False
            _log(f"  replicas agree: {result.replicas_agree}")
    finally:
        procs.stop(second.process)


def _engine_seconds(sim_url: str, reports: list[dict[str, Any]], *, runs: int) -> float:
    """Median time of `build_snapshot` in this process on the cluster the dashboard sees.

    Prepared as the dashboard does it (frozen manifests, pod memo, one build before the
    timed ones) where the code under test has those; otherwise plain builds.
    """
    from app.domain.cluster import AccountingOptions, ClusterState
    from app.domain.engine.build import build_snapshot
    from app.domain.report import AgentReport, ReceivedReport

    with httpx.Client(base_url=sim_url, timeout=300) as http:
        nodes = http.get("/api/v1/nodes").json()["items"]
        pods = http.get("/api/v1/pods").json()["items"]
        daemonset = http.get(
            "/apis/apps/v1/namespaces/kube-system/daemonsets/nvidia-device-plugin-daemonset"
        ).json()
    received_at = datetime.now(UTC)
    state = ClusterState(
        daemonset=daemonset,
        configmaps={},
        nodes=nodes,
        pods=pods,
        reports={
            r["node"]: ReceivedReport(report=AgentReport.model_validate(r), received_at=received_at)
            for r in reports
        },
    )
    options = AccountingOptions()
    extra: dict[str, Any] = {}
    try:
        from app.domain.engine.memo import EngineMemo  # type: ignore[import-not-found, unused-ignore]
        from app.gc_policy import freeze_listed  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        pass
    else:
        freeze_listed()
        extra["memo"] = EngineMemo()
        build_snapshot(state, options=options, now=datetime.now(UTC), **extra)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        build_snapshot(state, options=options, now=datetime.now(UTC), **extra)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _gpu_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-00", "labels": {"app": "bench-change"}},
        "spec": {
            "nodeName": cluster_gen.node_name(CHANGE_NODE),
            "containers": [
                {
                    "name": "job",
                    "image": "registry.local/ml/pytorch:24.10",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }


def _pod_changes(sim_url: str, client: httpx.Client, *, count: int) -> list[float]:
    """Create, then delete, a one-slot pod; seconds until /api/v1/summary shows each."""
    seconds = []
    base = _summary(client)["totals"]["requested"]
    pods = f"{sim_url}/api/v1/namespaces/team-00/pods"
    with httpx.Client(timeout=60) as sim:
        for index in range(count):
            name = f"bench-change-{index}"
            started = time.perf_counter()
            sim.post(pods, json=_gpu_pod(name)).raise_for_status()
            seen = procs.poll(
                lambda: _summary(client)["totals"]["requested"] == base + 1,
                timeout_s=120,
                what="the new pod in the snapshot",
            )
            seconds.append(seen - started)
            started = time.perf_counter()
            sim.delete(f"{pods}/{name}").raise_for_status()
            seen = procs.poll(
                lambda: _summary(client)["totals"]["requested"] == base,
                timeout_s=120,
                what="the deleted pod gone from the snapshot",
            )
            seconds.append(seen - started)
    return seconds


def _report_changes(
    dash_url: str,
    client: httpx.Client,
    uids: dict[tuple[str, str], str],
    *,
    start: datetime,
    count: int,
) -> list[float]:
    """A report adding (then removing) a host process on an advertised GPU: one error more."""
    seconds = []
    base = _summary(client)["findings"]["error"]
    headers = {"Authorization": f"Bearer {procs.AGENT_TOKEN}"}
    with httpx.Client(base_url=dash_url, timeout=60, headers=headers) as agent:
        for index in range(count * 2):
            body = cluster_gen.report_body(
                CHANGE_NODE, uids, collected_at=start + timedelta(seconds=index)
            )
            with_host = index % 2 == 0
            if with_host:
                body["gpus"][0]["processes"].append(
                    {"pid": 50_000, "used_memory_mib": 1024, "command": "python probe.py"}
                )
            wanted = base + 1 if with_host else base
            started = time.perf_counter()
            agent.post("/api/v1/agent/reports", json=body).raise_for_status()
            seen = procs.poll(
                lambda wanted=wanted: _summary(client)["findings"]["error"] == wanted,  # type: ignore[misc]
                timeout_s=120,
                what="the agent report in the snapshot",
            )
            seconds.append(seen - started)
    return seconds


def _log(text: str) -> None:
    print(text, flush=True)
