"""Agents prove their node with real bound ServiceAccount tokens, checked by real TokenReview.

The actor asks the API server for each node's token the way the kubelet projects the
chart's agent volume: a TokenRequest for the agent's ServiceAccount, bound to the node's
agent pod, with the dashboard's audience. The API server's review of it names the pod's
node in its extra fields, which is what the dashboard binds the report to.
"""

from __future__ import annotations

import httpx

from app.kube.tokenreview import NODE_NAME_KEY
from tests.real.conftest import RealWorld
from tests.real.world import AUDIENCE, NAMESPACE

REPORTS = "/api/v1/agent/reports"


def _post(world: RealWorld, node: str, token: str) -> httpx.Response:
    report = world.actor.report(node)
    assert report is not None
    body = report.model_dump(mode="json", by_alias=True)
    return httpx.post(
        f"{world.dashboard.url}{REPORTS}",
        json=body,
        timeout=10,
        headers={"Authorization": f"Bearer {token}"},
    )


def test_every_gpu_node_reports_with_its_own_bound_token(world: RealWorld) -> None:
    nodes = world.get("/api/v1/nodes").json()["nodes"]

    assert {n["name"]: n["agent"]["fresh"] for n in nodes} == {
        name: True for name in world.actor.inventories
    }


def test_the_api_servers_review_names_the_agent_pods_node(world: RealWorld) -> None:
    token = world.actor.agent_tokens(NAMESPACE, audience=AUDIENCE)("gpu-server-3")
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": [AUDIENCE]},
    }
    with world.plane.http() as http:
        review = http.post("/apis/authentication.k8s.io/v1/tokenreviews", json=body).json()

    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["extra"][NODE_NAME_KEY] == ["gpu-server-3"]
    assert _post(world, "gpu-server-3", token).status_code == 202


def test_a_token_bound_to_one_node_cannot_report_for_another(world: RealWorld) -> None:
    token = world.actor.agent_tokens(NAMESPACE, audience=AUDIENCE)("gpu-server-1")

    assert _post(world, "gpu-server-2", token).status_code == 403


def test_tokens_for_another_audience_or_account_are_refused(world: RealWorld) -> None:
    other_audience = world.actor.agent_tokens(NAMESPACE, audience="vault")("gpu-server-1")
    with world.plane.http() as http:
        answer = http.post(
            f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default/token",
            json={"spec": {"audiences": [AUDIENCE]}},
        )
    other_account = answer.json()["status"]["token"]

    assert _post(world, "gpu-server-1", other_audience).status_code == 401
    assert _post(world, "gpu-server-1", other_account).status_code == 401
