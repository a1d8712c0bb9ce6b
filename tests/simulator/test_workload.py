"""Simulated GPU processes, agent reports and the agents posting them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from app.domain.report import AgentReport
from app.simulator.world.cluster import SimulatedCluster
from app.simulator.world.scenario import WorkloadStep
from app.simulator.world.workload import Timeline
from tests.live import wait_for


class FakeDashboard:
    """Records agent report POSTs; can be told to fail."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self.status = 202
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                outer.reports.append((self.headers.get("Authorization", ""), body))
                self.send_response(outer.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeDashboard:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def dashboard() -> Iterator[FakeDashboard]:
    with FakeDashboard() as fake:
        yield fake


def test_report_has_host_and_pod_processes_and_memory(sim: SimulatedCluster) -> None:
    report = sim.report("gpu-server-1")
    assert report is not None
    by_index = {g.index: g for g in report.gpus}
    assert [p.user for p in by_index[0].processes] == ["alice"]
    pod_proc = by_index[2].processes[0]
    pod = sim.get("Pod", "notebook-0", "ml")
    assert pod is not None and pod_proc.pod_uid == pod["metadata"]["uid"]
    assert by_index[0].memory_used_mib == 61440 + 4
    assert by_index[3].processes == []
    assert report.assignments is not None
    assert [(a.pod, a.device_ids) for a in report.assignments] == [
        ("notebook-0", ["GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72"])
    ]


def test_report_time_slicing_device_ids_carry_replica_suffix() -> None:
    sim = SimulatedCluster("time-slicing")
    report = sim.report("gpu-node-a")
    assert report is not None and report.assignments
    ids = sorted(i for a in report.assignments for i in a.device_ids)
    uuid = report.gpus[0].uuid
    assert ids == [f"{uuid}::0", f"{uuid}::1"]


def test_report_unified_memory_gpu_has_null_memory() -> None:
    sim = SimulatedCluster("broken")
    report = sim.report("broken-gb10")
    assert report is not None
    assert report.gpus[0].memory_total_mib is None and report.gpus[0].memory_used_mib is None
    assert report.assignments is None


def test_start_and_stop_process_over_http(sim: SimulatedCluster) -> None:
    answer = httpx.post(
        f"{sim.url}/_sim/processes",
        json={
            "node": "gpu-server-1",
            "gpu": 3,
            "used_memory_mib": 512,
            "command": "x",
            "user": "eve",
        },
    )
    assert answer.status_code == 201
    pid = answer.json()["pid"]
    listed = httpx.get(f"{sim.url}/_sim/processes", params={"node": "gpu-server-1"}).json()
    assert pid in {p["pid"] for p in listed["processes"]}
    assert httpx.delete(f"{sim.url}/_sim/processes/gpu-server-1/{pid}").status_code == 200
    assert httpx.delete(f"{sim.url}/_sim/processes/gpu-server-1/{pid}").status_code == 404
    assert (
        httpx.post(f"{sim.url}/_sim/processes", json={"node": "nope", "gpu": 0}).status_code == 400
    )


def test_report_endpoint_serves_the_report(sim: SimulatedCluster) -> None:
    raw = httpx.get(f"{sim.url}/_sim/reports/gpu-server-1").content
    assert AgentReport.model_validate_json(raw).node == "gpu-server-1"
    nodes = httpx.get(f"{sim.url}/_sim/nodes").json()["nodes"]
    assert nodes[0]["plugin"]["capacity"] == {"nvidia.com/gpu": 2}


def test_agents_post_reports_with_token_and_after_process_change(
    dashboard: FakeDashboard,
) -> None:
    sim = SimulatedCluster("host-split")
    try:
        sim.configure_agents(report_to=dashboard.url, token="s3cret", interval_s=60)
        wait_for(lambda: dashboard.reports, what="a first report")
        auth, body = dashboard.reports[0]
        assert auth == "Bearer s3cret" and body["schema"] == 1 and body["node"] == "gpu-server-1"
        pid = sim.start_process("gpu-server-1", 3, used_memory_mib=1000, command="new")
        wait_for(
            lambda: any(
                pid in {p["pid"] for g in b["gpus"] for p in g["processes"]}
                for _, b in dashboard.reports
            ),
            what="a report right after the process started",
        )
    finally:
        sim.stop()


def test_agents_survive_a_failing_dashboard(dashboard: FakeDashboard) -> None:
    dashboard.status = 500
    sim = SimulatedCluster("host-split")
    try:
        sim.configure_agents(report_to=dashboard.url, token="t", interval_s=0.05)
        wait_for(lambda: len(dashboard.reports) >= 2, what="retries after failures")
        dashboard.status = 202
        count = len(dashboard.reports)
        wait_for(lambda: len(dashboard.reports) > count, what="reports after recovery")
    finally:
        sim.stop()


def test_timeline_steps_start_stop_processes_and_pods() -> None:
    sim = SimulatedCluster("host-split")
    timeline = Timeline([], loop=False, workload=sim.workload, registry=sim.registry)
    manifest = {
        "metadata": {"name": "job-1", "namespace": "ml"},
        "spec": {"nodeName": "gpu-server-1", "containers": [{"name": "j", "image": "i"}]},
    }
    timeline.apply(WorkloadStep(0, "create_pod", manifest))
    timeline.apply(
        WorkloadStep(
            0,
            "start_process",
            {"node": "gpu-server-1", "gpu": 3, "pod": "ml/job-1", "container": "j", "pid": 777},
        )
    )
    assert any(p.pid == 777 for p in sim.processes("gpu-server-1"))
    timeline.apply(WorkloadStep(0, "delete_pod", {"namespace": "ml", "name": "job-1"}))
    assert sim.get("Pod", "job-1", "ml") is None
    assert not any(p.pid == 777 for p in sim.processes("gpu-server-1"))


def test_demo_timeline_runs_in_background_and_stops_cleanly() -> None:
    sim = SimulatedCluster("demo")
    sim.scenario.steps[:] = [
        WorkloadStep(0, s.action, s.args) for s in sim.scenario.steps
    ]  # no waiting in tests
    sim.timeline.steps = sim.scenario.steps
    before = set(threading.enumerate())
    sim.start()
    try:
        wait_for(lambda: sim.timeline._thread is not None, what="timeline thread")
    finally:
        sim.stop()
    assert sim.timeline._thread is None
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("sim-")]
