"""The real scheduler places GPU pods by what the actor's plugin advertises; the dashboard agrees.

A pod asking for one `nvidia.com/gpu` is bound to a node with a free slot and shows as
that node's holder; a pod asking for more slots than any node has (20: the time-sliced node
has 16) stays Pending with the scheduler's own FailedScheduling event, and the dashboard
shows it as pending demand with its own reckoning of why (the largest schedulable free
count, below the request).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.live import wait_for
from tests.real.conftest import RealWorld

NAMESPACE = "ml"


def _pod(name: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "cuda:12",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


@pytest.fixture
def pods(world: RealWorld) -> Iterator[list[str]]:
    created: list[str] = []
    yield created
    with world.plane.http() as http:
        for name in created:
            http.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")


def _create(world: RealWorld, pods: list[str], manifest: dict[str, Any]) -> None:
    with world.plane.http() as http:
        http.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=manifest).raise_for_status()
    pods.append(manifest["metadata"]["name"])


def _api_pod(world: RealWorld, name: str) -> dict[str, Any]:
    with world.plane.http() as http:
        body: dict[str, Any] = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
    return body


def test_one_gpu_pod_is_bound_by_the_scheduler_and_shown_as_holder(
    world: RealWorld, pods: list[str]
) -> None:
    _create(world, pods, _pod("sched-one", 1))
    node = wait_for(
        lambda: _api_pod(world, "sched-one")["spec"].get("nodeName"),
        timeout_s=30,
        what="the scheduler to bind sched-one",
    )

    def holders() -> list[str]:
        doc = world.get(f"/api/v1/nodes/{node}").json()["node"]
        return [h["pod"] for g in doc["gpus"] for h in g["holders"]]

    assert wait_for(
        lambda: f"{NAMESPACE}/sched-one" in holders(),
        timeout_s=20,
        what="the dashboard to list the holder",
    )


def test_over_asking_pod_stays_pending_with_the_schedulers_reason(
    world: RealWorld, pods: list[str]
) -> None:
    _create(world, pods, _pod("sched-many", 20))

    def failed_scheduling() -> str | None:
        with world.plane.http() as http:
            events = http.get(
                f"/api/v1/namespaces/{NAMESPACE}/events",
                params={"fieldSelector": "involvedObject.name=sched-many"},
            ).json()
        return next(
            (e["message"] for e in events["items"] if e["reason"] == "FailedScheduling"), None
        )

    message = wait_for(failed_scheduling, timeout_s=30, what="FailedScheduling of sched-many")

    def demand() -> list[dict[str, Any]]:
        summary = world.get("/api/v1/summary").json()
        return [d for d in summary["pending_demand"] if d["slots"] == 20]

    shown = wait_for(demand, timeout_s=20, what="the pending demand on the dashboard")
    assert "Insufficient nvidia.com/gpu" in message
    assert _api_pod(world, "sched-many")["status"]["phase"] == "Pending"
    assert shown[0]["resource"] == "nvidia.com/gpu" and shown[0]["pods"] == 1
    assert shown[0]["reason"] == "too-large" and shown[0]["smallest"] == 20
    assert shown[0]["largest"] < 20
