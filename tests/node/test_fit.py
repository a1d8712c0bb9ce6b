"""The fit check's plugin refusal judged by the real device plugin on the real kubelet.

Under time-slicing with `failRequestsGreaterThanOne: true` the real plugin (v0.19.3) refuses
a request of two shared slots at admission: the kubelet fails the pod with
UnexpectedAdmissionError although the scheduler placed it. The dashboard's check says so
before the pod exists (`refused-above-one`), and says a request of one fits, which the real
node then runs.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.node.world import NodeWorld, gpu_pod, seed_objects, time_slicing, wait_until

NAMESPACE = "ml"


def _refusing_time_slicing() -> list[dict[str, Any]]:
    """The seed's namespaces, and its time-slicing edit with failRequestsGreaterThanOne."""
    namespaces = [o for o in seed_objects("host-split") if o["kind"] == "Namespace"]
    objects = time_slicing(replicas=4)
    configmap = next(o for o in objects if o["kind"] == "ConfigMap")
    config = configmap["data"]["config.yaml"]
    configmap["data"]["config.yaml"] = config.replace(
        "  timeSlicing:\n", "  timeSlicing:\n    failRequestsGreaterThanOne: true\n"
    )
    return [*namespaces, *objects]


def _ask(world: NodeWorld, slots: int) -> dict[str, Any]:
    answer = httpx.post(
        f"{world.dashboard.url}/api/v1/fit", json=gpu_pod("ask", slots=slots), timeout=10
    )
    assert answer.status_code == 200, answer.text
    (node,) = answer.json()["nodes"]
    return dict(node)


def _admission_failure(world: NodeWorld, name: str) -> dict[str, Any] | None:
    with world.plane.http() as http:
        pod: dict[str, Any] = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
    status = pod.get("status") or {}
    return status if status.get("phase") == "Failed" else None


def test_fit_refusal_above_one_is_what_the_real_plugin_does(clean_node: NodeWorld) -> None:
    world = clean_node
    world.apply(_refusing_time_slicing())
    refused = wait_until(
        lambda: (
            node
            if world.allocatable() == "8"
            and (node := _ask(world, 2))["reasons"][:1]
            and node["reasons"][0]["code"] == "refused-above-one"
            else None
        ),
        what="the real 8 shared slots and the dashboard's refusal of 2",
        timeout_s=120,
    )
    assert refused["fits"] is False
    assert refused["reasons"] == [
        {
            "code": "refused-above-one",
            "params": {"resource": "nvidia.com/gpu", "requested": 2, "mode": "time-slicing"},
        }
    ]
    one = _ask(world, 1)
    assert one["fits"] is True and len(one["gpus"]) == 1

    world.apply([gpu_pod("fit-two", slots=2)])
    status = wait_until(
        lambda: _admission_failure(world, "fit-two"),
        what="the real kubelet failing fit-two at admission",
        timeout_s=60,
    )
    assert status.get("reason") == "UnexpectedAdmissionError", status
    world.apply([gpu_pod("fit-one", slots=1)])
    world.wait_running(NAMESPACE, "fit-one")
