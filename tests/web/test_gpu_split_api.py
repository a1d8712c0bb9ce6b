"""Per-node GPU split and the change history, through the real dashboard and simulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client

from app.kube.client import make_api_client
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for

NODE = "gpu-server-1"
NS = "kube-system"
SHARED = "nvidia-device-plugin-daemonset"
OWN = f"{SHARED}-{NODE}"
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
BLIND = {"force": "true"}  # an apply without its preview's token, asked for (else 428)
GPU = [
    "GPU-3f1c5a2e-8b4d-4e6f-9a7b-0c1d2e3f4a50",
    "GPU-7a2b9c4d-1e3f-4a5b-8c6d-2e4f6a8b0c61",
    "GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72",
    "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83",
]
GIVE_GPU_1 = {
    "kubernetesGpus": [GPU[1], GPU[2], GPU[3]],
    "mode": "basic",
    "replicas": 1,
    "confirmHostProcesses": False,
}


def allocatable(stack: Stack) -> dict[str, str]:
    """nvidia.com/gpu allocatable per node, as the API server holds it."""
    api_client = make_api_client(host=stack.simulator.url)
    try:
        nodes = client.CoreV1Api(api_client).list_node().items
    finally:
        api_client.close()
    return {n.metadata.name: (n.status.allocatable or {}).get("nvidia.com/gpu", "-") for n in nodes}


def daemonsets(stack: Stack) -> list[str]:
    api_client = make_api_client(host=stack.simulator.url)
    try:
        items = client.AppsV1Api(api_client).list_namespaced_daemon_set(NS).items
    finally:
        api_client.close()
    return sorted(d.metadata.name for d in items)


def put(stack: Stack, node: str, body: dict[str, Any], *, dry_run: bool = False) -> httpx.Response:
    params = {"dryRun": "true"} if dry_run else BLIND
    return stack.client.put(
        f"/api/v1/nodes/{node}/gpu-split", json=body, params=params, headers=BEARER
    )


def split(stack: Stack, node: str = NODE) -> dict[str, Any]:
    response = stack.client.get(f"/api/v1/nodes/{node}/gpu-split")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def changes(stack: Stack) -> list[dict[str, Any]]:
    response = stack.client.get("/api/v1/changes")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["changes"]
    return items


def reported(stack: Stack, node: str, gpus: int) -> bool:
    response = stack.client.get(f"/api/v1/nodes/{node}")
    if response.status_code != 200:
        return False
    body = response.json()
    return (body.get("node", body).get("physical_gpus")) == gpus


@pytest.fixture
def admin(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("host-split")
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    return stack


def test_gpu_split_get_shows_roles_processes_and_the_governing_daemonset(admin: Stack) -> None:
    body = split(admin)
    assert body["daemonset"] == {"name": SHARED, "namespace": NS, "own": False}
    assert [(g["index"], g["uuid"], g["role"], g["slots"]) for g in body["gpus"]] == [
        (0, GPU[0], "host", 0),
        (1, GPU[1], "host", 0),
        (2, GPU[2], "kubernetes", 1),
        (3, GPU[3], "kubernetes", 1),
    ]
    assert [(p["pid"], p["owner"], p["user"]) for p in body["gpus"][1]["processes"]] == [
        (41388, "host", "bob")
    ]
    assert [(p["owner"], p["pod"]) for p in body["gpus"][2]["processes"]] == [
        ("pod", "ml/notebook-0")
    ]


def test_giving_gpu_1_to_kubernetes_changes_only_that_node_and_rollback_restores_it(
    admin: Stack,
) -> None:
    assert allocatable(admin) == {NODE: "2"}
    preview = put(admin, NODE, GIVE_GPU_1, dry_run=True)
    assert preview.status_code == 200, preview.text
    plan = preview.json()
    assert (plan["slotsBefore"], plan["slotsAfter"]) == (2, 3)
    assert plan["blocking"] is True
    assert plan["hostProcesses"] == ["pid 41388 bob: torchrun --nproc-per-node=1 finetune.py"]
    assert [(w["action"], w["kind"], w["name"]) for w in plan["writes"]] == [
        ("create", "DaemonSet", OWN),
        ("replace", "DaemonSet", SHARED),
        ("label", "Node", NODE),
    ]
    assert plan["serverDryRunOk"] is True
    assert daemonsets(admin) == [SHARED]  # the preview wrote nothing

    refused = put(admin, NODE, GIVE_GPU_1)
    assert refused.status_code == 409
    assert "torchrun" in refused.json()["detail"]
    assert daemonsets(admin) == [SHARED]

    applied = put(admin, NODE, {**GIVE_GPU_1, "confirmHostProcesses": True})
    assert applied.status_code == 200, applied.text
    assert applied.json()["after"]["kubernetes_gpus"] == [GPU[1], GPU[2], GPU[3]]
    wait_for(lambda: allocatable(admin) == {NODE: "3"}, what="allocatable 3 on gpu-server-1")
    assert daemonsets(admin) == [SHARED, OWN]
    after = split(admin)
    assert after["daemonset"]["own"] is True
    assert [g["role"] for g in after["gpus"]] == ["host", "kubernetes", "kubernetes", "kubernetes"]

    history = changes(admin)
    assert [(c["kind"], c["action"], c["node"]) for c in history] == [("split", "change", NODE)]
    change = history[0]["id"]
    assert change == applied.json()["changeId"]

    undo = admin.client.post(f"/api/v1/changes/{change}/rollback", params=BLIND, headers=BEARER)
    assert undo.status_code == 200, undo.text
    wait_for(lambda: allocatable(admin) == {NODE: "2"}, what="allocatable back to 2")
    assert daemonsets(admin) == [SHARED]
    assert split(admin)["daemonset"] == {"name": SHARED, "namespace": NS, "own": False}
    history = changes(admin)
    assert [(c["action"], c["rollsBack"]) for c in history] == [
        ("rollback", change),
        ("change", None),
    ]


def test_delete_returns_the_node_to_the_shared_daemonset(admin: Stack) -> None:
    applied = put(
        admin,
        NODE,
        {**GIVE_GPU_1, "mode": "time-slicing", "replicas": 4, "confirmHostProcesses": True},
    )
    assert applied.status_code == 200, applied.text
    wait_for(lambda: allocatable(admin) == {NODE: "12"}, what="3 GPUs x 4 replicas")
    again = put(
        admin,
        NODE,
        {**GIVE_GPU_1, "mode": "time-slicing", "replicas": 4, "confirmHostProcesses": True},
    )
    assert again.json() == {
        "changed": False,
        "dryRun": False,
        "detail": "The node already runs with this split.",
    }
    back = admin.client.delete(f"/api/v1/nodes/{NODE}/gpu-split", params=BLIND, headers=BEARER)
    assert back.status_code == 200, back.text
    wait_for(lambda: allocatable(admin) == {NODE: "2"}, what="the shared DaemonSet's 2 slots")
    assert daemonsets(admin) == [SHARED]
    twice = admin.client.delete(f"/api/v1/nodes/{NODE}/gpu-split", params=BLIND, headers=BEARER)
    assert twice.status_code == 409
    assert twice.json()["detail"] == f"Node {NODE} is already served by the shared DaemonSet."


def test_gpu_split_refuses_unknown_gpus_and_needs_an_admin(admin: Stack) -> None:
    unknown = put(admin, NODE, {**GIVE_GPU_1, "kubernetesGpus": ["GPU-not-here"]})
    assert unknown.status_code == 422
    assert "has no GPU GPU-not-here" in unknown.json()["detail"]
    anonymous = admin.client.put(f"/api/v1/nodes/{NODE}/gpu-split", json=GIVE_GPU_1)
    assert anonymous.status_code in (401, 403)
    missing = admin.client.get("/api/v1/nodes/no-such-node/gpu-split")
    assert missing.status_code == 404
    assert daemonsets(admin) == [SHARED]


def test_a_split_on_the_five_node_demo_touches_no_other_node(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("demo")
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    before = allocatable(stack)
    assert before["gpu-server-1"] == "2"
    applied = put(stack, NODE, {**GIVE_GPU_1, "confirmHostProcesses": True})
    assert applied.status_code == 200, applied.text
    wait_for(lambda: allocatable(stack)[NODE] == "3", what="allocatable 3 on gpu-server-1")
    assert allocatable(stack) == {**before, NODE: "3"}
    undo = stack.client.post(
        f"/api/v1/changes/{applied.json()['changeId']}/rollback", params=BLIND, headers=BEARER
    )
    assert undo.status_code == 200, undo.text
    wait_for(lambda: allocatable(stack) == before, what="every node as before")


def _host_process_on_gpu_2(stack: Stack) -> None:
    """GPU 2 kept for the host by a split, then a host process starts there."""
    applied = put(stack, NODE, {**GIVE_GPU_1, "kubernetesGpus": [GPU[3]]})
    assert applied.status_code == 200, applied.text
    wait_for(lambda: allocatable(stack) == {NODE: "1"}, what="1 slot: GPU 3 alone")
    stack.simulator.start_process(NODE, 2, used_memory_mib=2048, user="carol", command="eval.py")
    wait_for(
        lambda: any(p["user"] == "carol" for p in split(stack)["gpus"][2]["processes"]),
        what="carol's host process on GPU 2 in the agent report",
    )


def test_return_to_shared_asks_to_confirm_host_processes_on_returning_gpus(admin: Stack) -> None:
    _host_process_on_gpu_2(admin)

    preview = admin.client.request(
        "DELETE", f"/api/v1/nodes/{NODE}/gpu-split", params={"dryRun": "true"}, headers=BEARER
    ).json()
    assert preview["blocking"] is True
    assert [p for p in preview["hostProcesses"] if "carol" in p]
    refused = admin.client.delete(f"/api/v1/nodes/{NODE}/gpu-split", params=BLIND, headers=BEARER)
    assert refused.status_code == 409
    assert "carol" in refused.json()["detail"]
    assert "confirmHostProcesses=true" in refused.json()["detail"]
    assert daemonsets(admin) == [SHARED, OWN]

    confirmed = admin.client.request(
        "DELETE",
        f"/api/v1/nodes/{NODE}/gpu-split",
        json={"confirmHostProcesses": True, "expectedToken": preview["token"]},
        headers=BEARER,
    )
    assert confirmed.status_code == 200, confirmed.text
    wait_for(lambda: allocatable(admin) == {NODE: "2"}, what="the shared DaemonSet's 2 slots")


def test_split_rollback_asks_to_confirm_host_processes_on_returning_gpus(admin: Stack) -> None:
    _host_process_on_gpu_2(admin)
    change = changes(admin)[0]["id"]

    refused = admin.client.post(f"/api/v1/changes/{change}/rollback", params=BLIND, headers=BEARER)
    assert refused.status_code == 409
    assert "carol" in refused.json()["detail"]
    assert daemonsets(admin) == [SHARED, OWN]

    confirmed = admin.client.post(
        f"/api/v1/changes/{change}/rollback",
        json={"confirmHostProcesses": True},
        params=BLIND,
        headers=BEARER,
    )
    assert confirmed.status_code == 200, confirmed.text
    wait_for(lambda: allocatable(admin) == {NODE: "2"}, what="back to the shared 2 slots")
