"""Quantities on the real tier: what kube-apiserver v1.35.4 stores, our reader counts right.

A node advertising 1,000 slots is stored as `"1k"`; pods asking `"1e0"`, `"1000m"` and
`"2000"` are stored as `"1e0"` (Go keeps a canonical-looking text), `"1"` and `"2k"`, and
read as 1, 1 and 2,000 slots. The simulator tier runs the same through the dashboard
(tests/web/test_quantities_live.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.domain.accounting.ledger.figures import gpu_resource_counts
from app.domain.accounting.pods import pod_slots
from tests.real.controlplane import ControlPlane

NODE = "quantities-node"
NAMESPACE = "quantities"
GPU = "nvidia.com/gpu"


def _pod(name: str, gpus: str, *, node: str | None) -> dict[str, object]:
    spec: dict[str, object] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {GPU: gpus}}}],
        "tolerations": [{"operator": "Exists"}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.fixture(scope="module")
def http(plane: ControlPlane) -> Iterator[httpx.Client]:
    with plane.http() as client:
        client.post(
            "/api/v1/namespaces",
            json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        ).raise_for_status()
        client.post(
            "/api/v1/nodes",
            json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}},
        ).raise_for_status()
        try:
            yield client
        finally:
            client.delete(f"/api/v1/nodes/{NODE}")
            client.delete(f"/api/v1/namespaces/{NAMESPACE}")


def test_thousand_slot_node_and_quantity_forms_stored_and_counted(http: httpx.Client) -> None:
    status = {"status": {"capacity": {GPU: "1000"}, "allocatable": {GPU: "1000"}}}
    http.patch(
        f"/api/v1/nodes/{NODE}/status",
        json=status,
        headers={"Content-Type": "application/merge-patch+json"},
    ).raise_for_status()
    for name, gpus, node in (
        ("one-e0", "1e0", NODE),
        ("one-milli", "1000m", NODE),
        ("big", "2000", None),
    ):
        http.post(
            f"/api/v1/namespaces/{NAMESPACE}/pods", json=_pod(name, gpus, node=node)
        ).raise_for_status()
    node = http.get(f"/api/v1/nodes/{NODE}").json()
    assert node["status"]["allocatable"][GPU] == "1k"
    assert gpu_resource_counts(node, "allocatable") == {GPU: 1000}
    pods = {
        p["metadata"]["name"]: p
        for p in http.get(f"/api/v1/namespaces/{NAMESPACE}/pods").json()["items"]
    }
    stored = {
        name: pod["spec"]["containers"][0]["resources"]["requests"][GPU]
        for name, pod in pods.items()
    }
    assert stored == {"one-e0": "1e0", "one-milli": "1", "big": "2k"}
    assert {name: pod_slots(pod) for name, pod in pods.items()} == {
        "one-e0": {GPU: 1},
        "one-milli": {GPU: 1},
        "big": {GPU: 2000},
    }


def test_real_api_server_refuses_what_the_simulator_refuses(http: httpx.Client) -> None:
    for gpus in ("500m", "-1", "x"):
        answer = http.post(
            f"/api/v1/namespaces/{NAMESPACE}/pods", json=_pod("odd", gpus, node=None)
        )
        assert answer.status_code in (400, 422), (gpus, answer.text)
    requests_only = _pod("requests-only", "1", node=None)
    requests_only["spec"]["containers"][0]["resources"] = {"requests": {GPU: "1"}}  # type: ignore[index]
    answer = http.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=requests_only)
    assert answer.status_code == 422
    assert "Limit must be set for non overcommitable resources" in answer.text
