"""The fit check judged by the real kube-scheduler: ask the dashboard, then create the pod.

Where the check names nodes that fit, the real scheduler binds the pod to one of them; where
it says nowhere, the pod stays Pending and the scheduler's FailedScheduling event says the
same reason. Cases on the demo's nodes: basic slots, time-slicing (gpu-ts-7), MIG mixed
(gpu-mig-8), a taint with and without its toleration, node affinity on a GPU model label,
the cordoned gpu-server-6, and the DRA driver's extended resource (gpu-dra-9). Pods live in
their own namespace; every node edit is undone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.live import wait_for
from tests.real.conftest import RealWorld

NAMESPACE = "fit"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _pod(name: str, count: int, *, resource: str = "nvidia.com/gpu", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "cuda:12",
                    "resources": {"limits": {resource: str(count)}},
                }
            ],
            **spec,
        },
    }


def _on(*nodes: str) -> dict[str, Any]:
    """A required node affinity on the nodes' names (matchFields), leaving the filters to judge."""
    field = {"key": "metadata.name", "operator": "In", "values": list(nodes)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [field]}]
            }
        }
    }


@pytest.fixture
def fit_pods(world: RealWorld) -> Iterator[list[str]]:
    with world.plane.http() as http:
        made = http.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
        assert made.status_code in (201, 409), made.text
    created: list[str] = []
    yield created
    with world.plane.http() as http:
        for name in created:
            http.delete(
                f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", params={"gracePeriodSeconds": 0}
            )
    wait_for(lambda: _settled(world), timeout_s=60, what="the fit pods gone from both sides")


def _settled(world: RealWorld) -> bool:
    """No pod of the namespace in the API server, and none held on the dashboard."""
    with world.plane.http() as http:
        left = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods").json()["items"]
    nodes = world.get("/api/v1/nodes").json()["nodes"]
    held = [p for n in nodes for p in n["pods"] if p["pod"].startswith(f"{NAMESPACE}/")]
    return not left and not held


def _ask(world: RealWorld, manifest: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(f"{world.dashboard.url}/api/v1/fit", json=manifest, timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _fitting(answer: dict[str, Any]) -> set[str]:
    return {n["node"] for n in answer["nodes"] if n["fits"]}


def _reasons(answer: dict[str, Any], node: str) -> list[str]:
    return [r["code"] for n in answer["nodes"] if n["node"] == node for r in n["reasons"]]


def _create(world: RealWorld, pods: list[str], manifest: dict[str, Any]) -> None:
    with world.plane.http() as http:
        made = http.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=manifest)
        assert made.status_code == 201, made.text
    pods.append(manifest["metadata"]["name"])


def _bound_to(world: RealWorld, name: str) -> str:
    def node() -> str | None:
        with world.plane.http() as http:
            pod = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
        return (pod.get("spec") or {}).get("nodeName")

    return wait_for(node, timeout_s=30, interval_s=0.2, what=f"the scheduler to bind {name}")


def _failed_scheduling(world: RealWorld, name: str) -> str:
    def message() -> str | None:
        with world.plane.http() as http:
            events = http.get(
                f"/api/v1/namespaces/{NAMESPACE}/events",
                params={"fieldSelector": f"involvedObject.name={name}"},
            ).json()["items"]
        return next((e["message"] for e in events if e["reason"] == "FailedScheduling"), None)

    found = wait_for(message, timeout_s=30, interval_s=0.2, what=f"FailedScheduling of {name}")
    with world.plane.http() as http:
        pod = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
    return found


def _patch_node(world: RealWorld, node: str, patch: dict[str, Any]) -> None:
    with world.plane.http() as http:
        done = http.patch(f"/api/v1/nodes/{node}", content=json.dumps(patch), headers=MERGE)
        assert done.status_code == 200, done.text


def _ask_when(
    world: RealWorld, manifest: dict[str, Any], ready: Any, *, what: str
) -> dict[str, Any]:
    """The answer once the dashboard's snapshot shows a change just made to the cluster."""
    return wait_for(
        lambda: answer if ready(answer := _ask(world, manifest)) else None,
        timeout_s=30,
        interval_s=0.2,
        what=what,
    )


def test_fit_basic_pod_binds_where_the_check_said(world: RealWorld, fit_pods: list[str]) -> None:
    wait_for(lambda: _settled(world), timeout_s=60, what="no fit pod left")
    manifest = _pod("fit-basic", 1)
    answer = _ask(world, manifest)
    assert answer["fits"] is True
    assert "gpu-server-6" not in _fitting(answer)  # cordoned
    _create(world, fit_pods, manifest)
    assert _bound_to(world, "fit-basic") in _fitting(answer)


def test_fit_nowhere_stays_pending_as_the_reason_said(
    world: RealWorld, fit_pods: list[str]
) -> None:
    manifest = _pod("fit-many", 20)
    answer = _ask(world, manifest)
    assert answer["fits"] is False
    assert _reasons(answer, "gpu-ts-7") == ["insufficient"]
    _create(world, fit_pods, manifest)
    assert "Insufficient nvidia.com/gpu" in _failed_scheduling(world, "fit-many")


def test_fit_time_slicing_and_mig_profiles_bind_on_their_nodes(
    world: RealWorld, fit_pods: list[str]
) -> None:
    wait_for(lambda: _settled(world), timeout_s=60, what="no fit pod left")
    shared = _pod("fit-shared", 3, nodeSelector={"gpu-pool": "shared"})
    answer = _ask(world, shared)
    assert _fitting(answer) == {"gpu-ts-7"}  # 4 L40S x4; gpu-mig-8 has one nvidia.com/gpu
    assert len(next(n for n in answer["nodes"] if n["node"] == "gpu-ts-7")["gpus"]) == 3
    _create(world, fit_pods, shared)
    assert _bound_to(world, "fit-shared") == "gpu-ts-7"

    mig = _pod("fit-mig", 2, resource="nvidia.com/mig-3g.40gb")
    answer = _ask(world, mig)
    assert _fitting(answer) == {"gpu-mig-8"}
    assert _reasons(answer, "gpu-server-1") == ["mig-profile-absent"]
    _create(world, fit_pods, mig)
    assert _bound_to(world, "fit-mig") == "gpu-mig-8"

    held = _pod("fit-mig-held", 1, resource="nvidia.com/mig-3g.40gb")
    answer = _ask_when(
        world, held, lambda a: not a["fits"], what="the two 3g.40gb devices held on the dashboard"
    )
    assert _reasons(answer, "gpu-mig-8") == ["mig-profile-held"]
    _create(world, fit_pods, held)
    assert "Insufficient nvidia.com/mig-3g.40gb" in _failed_scheduling(world, "fit-mig-held")


def test_fit_cordoned_node_is_refused_by_both(world: RealWorld, fit_pods: list[str]) -> None:
    manifest = _pod("fit-cordoned", 1, affinity=_on("gpu-server-6"))
    answer = _ask(world, manifest)
    assert _fitting(answer) == set()
    assert _reasons(answer, "gpu-server-6") == ["cordoned"]
    assert _reasons(answer, "gpu-server-1") == ["node-affinity"]
    _create(world, fit_pods, manifest)
    assert "unschedulable" in _failed_scheduling(world, "fit-cordoned")


@pytest.fixture
def tainted_server_2(world: RealWorld) -> Iterator[str]:
    _patch_node(
        world,
        "gpu-server-2",
        {"spec": {"taints": [{"key": "team", "value": "vision", "effect": "NoSchedule"}]}},
    )
    yield "gpu-server-2"
    _patch_node(world, "gpu-server-2", {"spec": {"taints": None}})


def test_fit_taint_needs_its_toleration_for_both(
    world: RealWorld, fit_pods: list[str], tainted_server_2: str
) -> None:
    wait_for(lambda: _settled(world), timeout_s=60, what="no fit pod left")
    plain = _pod("fit-taint", 1, affinity=_on(tainted_server_2))
    answer = _ask_when(
        world, plain, lambda a: "taint" in _reasons(a, tainted_server_2), what="the taint shown"
    )
    taint = next(n for n in answer["nodes"] if n["node"] == tainted_server_2)["reasons"][0]
    assert taint == {
        "code": "taint",
        "params": {"key": "team", "value": "vision", "effect": "NoSchedule"},
    }
    _create(world, fit_pods, plain)
    assert "untolerated taint" in _failed_scheduling(world, "fit-taint")

    toleration = {"key": "team", "operator": "Equal", "value": "vision", "effect": "NoSchedule"}
    tolerating = _pod("fit-tolerating", 1, affinity=_on(tainted_server_2), tolerations=[toleration])
    assert _fitting(_ask(world, tolerating)) == {tainted_server_2}
    _create(world, fit_pods, tolerating)
    assert _bound_to(world, "fit-tolerating") == tainted_server_2


@pytest.fixture
def labelled_l40s(world: RealWorld) -> Iterator[str]:
    _patch_node(world, "gpu-ts-7", {"metadata": {"labels": {"nvidia.com/gpu.product": "L40S"}}})
    yield "gpu-ts-7"
    _patch_node(world, "gpu-ts-7", {"metadata": {"labels": {"nvidia.com/gpu.product": None}}})


def test_fit_node_affinity_on_the_gpu_model_label(
    world: RealWorld, fit_pods: list[str], labelled_l40s: str
) -> None:
    wait_for(lambda: _settled(world), timeout_s=60, what="no fit pod left")
    term = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["L40S"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }
    manifest = _pod("fit-model", 1, affinity=affinity)
    answer = _ask_when(
        world, manifest, lambda a: _fitting(a) == {labelled_l40s}, what="the label on the dashboard"
    )
    assert _reasons(answer, "gpu-server-2") == ["node-affinity"]
    _create(world, fit_pods, manifest)
    assert _bound_to(world, "fit-model") == labelled_l40s


def test_fit_dra_extended_resource_binds_on_the_dra_node(
    world: RealWorld, fit_pods: list[str]
) -> None:
    wait_for(lambda: _settled(world), timeout_s=60, what="no fit pod left")
    two = _pod("fit-dra-two", 2, affinity=_on("gpu-dra-9"))
    answer = _ask(world, two)
    assert _reasons(answer, "gpu-dra-9") == ["dra-no-device"]
    one = _pod("fit-dra", 1, affinity=_on("gpu-dra-9"))
    answer = _ask(world, one)
    assert _fitting(answer) == {"gpu-dra-9"}
    _create(world, fit_pods, one)
    assert _bound_to(world, "fit-dra") == "gpu-dra-9"
    _create(world, fit_pods, two)
    _failed_scheduling(world, "fit-dra-two")


@pytest.fixture
def gpu_quota(world: RealWorld, fit_pods: list[str]) -> Iterator[str]:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": NAMESPACE},
        "spec": {"hard": {"requests.nvidia.com/gpu": "1"}},
    }
    path = f"/api/v1/namespaces/{NAMESPACE}/resourcequotas"
    with world.plane.http() as http:
        made = http.post(path, json=quota)
        assert made.status_code == 201, made.text

    def counted() -> bool:
        with world.plane.http() as http:
            status = http.get(f"{path}/gpus").json().get("status") or {}
        return "requests.nvidia.com/gpu" in (status.get("used") or {})

    # quota admission refuses pods until the controller has counted the namespace once
    wait_for(counted, timeout_s=30, interval_s=0.2, what="the quota controller's first count")
    yield "gpus"
    with world.plane.http() as http:
        http.delete(f"{path}/gpus")


def test_fit_resource_quota_used_up_is_refused_at_creation(
    world: RealWorld, fit_pods: list[str], gpu_quota: str
) -> None:
    wait_for(lambda: _settled(world), timeout_s=60, what="no fit pod left")
    first = _pod("fit-quota-1", 1)
    assert _ask(world, first)["fits"] is True
    _create(world, fit_pods, first)
    _bound_to(world, "fit-quota-1")
    second = _pod("fit-quota-2", 1)
    answer = _ask_when(
        world,
        second,
        lambda a: not a["fits"],
        what="the quota controller's usage on the dashboard",
    )
    assert {r["code"] for n in answer["nodes"] for r in n["reasons"]} >= {"quota-exhausted"}
    assert all(n["reasons"][0]["code"] == "quota-exhausted" for n in answer["nodes"])
    assert answer["nodes"][0]["reasons"][0]["params"] == {
        "quota": gpu_quota,
        "resource": "nvidia.com/gpu",
        "requested": 1,
        "used": 1,
        "hard": 1,
    }
    with world.plane.http() as http:
        refused = http.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=second)
    assert refused.status_code == 403 and "exceeded quota" in refused.text
