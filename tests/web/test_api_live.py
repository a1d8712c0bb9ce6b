"""The JSON API end to end: simulator -> kubernetes client -> cache -> engine -> HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import Stack

NODE = "gpu-server-1"
SLOT_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "extra-slot", "namespace": "default"},
    "spec": {
        "nodeName": NODE,
        "containers": [
            {"name": "main", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ],
    },
    "status": {"phase": "Running"},
}


def node_doc(stack: Stack) -> dict[str, Any]:
    response = stack.client.get(f"/api/v1/nodes/{NODE}")
    response.raise_for_status()
    node: dict[str, Any] = response.json()["node"]
    return node


def advertised_gpu(stack: Stack) -> dict[str, Any]:
    return next(gpu for gpu in node_doc(stack)["gpus"] if gpu["role"] == "advertised")


def test_summary_host_split_counts_four_physical_two_visible_two_host(host_split: Stack) -> None:
    summary = host_split.summary()
    assert summary["mode"] == "basic"
    assert summary["resource"] == "nvidia.com/gpu"
    assert summary["totals"] == {
        "physical_gpus": 4,
        "visible_gpus": 2,
        "host_gpus": 2,
        "failing_gpus": 0,
        "allocatable": 2,
        "requested": 1,
        "free": 1,
        "stranded": 0,
        "pending": 0,
    }
    assert summary["resources"] == {
        "nvidia.com/gpu": {"allocatable": 2, "requested": 1, "free": 1, "stranded": 0}
    }
    assert summary["pending_demand"] == []
    assert summary["findings"]["error"] == 0
    assert summary["stale"] is False


def test_host_process_on_advertised_gpu_raises_finding_with_process_evidence(
    host_split: Stack,
) -> None:
    gpu = advertised_gpu(host_split)
    pid = host_split.simulator.start_process(
        NODE, gpu["index"], used_memory_mib=30_000, command="python train_llm.py", user="alice"
    )

    def finding() -> dict[str, Any] | None:
        findings = host_split.client.get("/api/v1/findings", params={"node": NODE}).json()
        return next(
            (
                f
                for f in findings["findings"]
                if f["gpu_uuid"] == gpu["uuid"]
                and f["scope"] == "gpu"
                and pid in f["evidence"].values()
            ),
            None,
        )

    found: dict[str, Any] = host_split.wait(finding, what="host-process finding")  # type: ignore[assignment]
    assert found["severity"] in ("error", "warning")
    assert 30_000 in found["evidence"].values()
    assert found["remedy"]
    host_gpu = next(g for g in node_doc(host_split)["gpus"] if g["uuid"] == gpu["uuid"])
    assert host_gpu["worst_severity"] in ("error", "warning")
    assert any(p["pid"] == pid and p["owner"] == "host" for p in host_gpu["processes"])


def test_cache_follows_live_changes_pod_created_requested_goes_up(host_split: Stack) -> None:
    before = host_split.summary()["totals"]["requested"]  # type: ignore[index]
    host_split.simulator.create_pod(SLOT_POD)
    host_split.wait(
        lambda: host_split.summary()["totals"]["requested"] == before + 1,  # type: ignore[index]
        what="requested slots to go up",
    )
    host_split.simulator.delete_pod("default", "extra-slot")
    host_split.wait(
        lambda: host_split.summary()["totals"]["requested"] == before,  # type: ignore[index]
        what="requested slots to go down",
    )


def test_api_calls_cost_the_api_server_no_request(host_split: Stack) -> None:
    simulator = host_split.simulator
    simulator.reset_request_counts()
    for path in (
        "/api/v1/summary",
        "/api/v1/nodes",
        f"/api/v1/nodes/{NODE}",
        "/api/v1/findings",
        "/metrics",
        "/readyz",
    ):
        for _ in range(20):
            assert host_split.client.get(path).status_code == 200
    assert simulator.request_count() == 0, simulator.request_counts()


def test_api_outage_serves_stale_snapshot_not_500(make_stack: Callable[..., Stack]) -> None:
    stack = make_stack("host-split", probe_interval_s=0.2)
    stack.wait(lambda: stack.summary()["totals"]["physical_gpus"] == 4, what="first report")  # type: ignore[index]
    stack.simulator.set_unavailable(True)
    stack.simulator.drop_watches()
    stack.wait(lambda: stack.summary()["stale"], what="stale snapshot")
    summary = stack.summary()
    assert summary["totals"]["allocatable"] == 2  # type: ignore[index]
    assert summary["stale_age_s"] is not None
    ready = stack.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "degraded"
    assert stack.client.get("/api/v1/nodes").json()["stale"] is True

    stack.simulator.set_unavailable(False)
    stack.wait(lambda: not stack.summary()["stale"], what="recovery")
    assert stack.client.get("/readyz").json()["status"] == "ok"
    stack.simulator.create_pod(SLOT_POD)
    stack.wait(lambda: stack.summary()["totals"]["requested"] == 2, what="watch resumed")  # type: ignore[index]


def test_a_read_rbac_refuses_is_named_as_rbac_not_as_an_outage(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("host-split")
    stack.wait(lambda: stack.summary()["totals"]["physical_gpus"] == 4, what="first report")  # type: ignore[index]
    stack.simulator.fail_next(verb="watch", kind="Node", code=403, count=1000)
    stack.simulator.fail_next(verb="list", kind="Node", code=403, count=1000)
    stack.simulator.drop_watches()

    reason = stack.wait(lambda: stack.summary()["stale_reason"], what="stale snapshot")

    assert str(reason).startswith("the API server refuses a read (RBAC): ")
    stack.simulator.clear_faults()
    stack.wait(lambda: not stack.summary()["stale"], what="recovery", timeout_s=20)


def test_node_unknown_is_404_with_message(host_split: Stack) -> None:
    response = host_split.client.get("/api/v1/nodes/no-such-node")
    assert response.status_code == 404
    assert "no-such-node" in response.json()["detail"]


def test_findings_filter_by_severity_returns_only_that_severity(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("broken")
    stack.wait(lambda: stack.summary()["findings"]["error"] > 0, what="error findings")  # type: ignore[index]
    errors = stack.client.get("/api/v1/findings", params={"severity": "error"}).json()["findings"]
    assert errors and {f["severity"] for f in errors} == {"error"}
    assert stack.client.get("/api/v1/findings", params={"severity": "bogus"}).status_code == 422


def test_metrics_expose_slots_and_findings_per_node(host_split: Stack) -> None:
    text = host_split.client.get("/metrics").text
    assert f'gpu_slots_allocatable{{node="{NODE}",resource="nvidia.com/gpu"}} 2' in text
    assert f'gpu_slots_requested{{node="{NODE}",resource="nvidia.com/gpu"}} 1' in text
    assert f'gpu_slots_free{{node="{NODE}",resource="nvidia.com/gpu"}} 1' in text
    assert "# TYPE gpu_slots_findings gauge" in text
