"""Agents bound to their node: projected ServiceAccount tokens reviewed by the API server.

The simulator issues tokens to its agents and answers TokenReviews about them, so the
dashboard checks them with the same `kubernetes` client code it uses in a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from app.simulator.apiserver.resources import NAMESPACE
from app.simulator.apiserver.tokenreview import (
    AGENT_NAMESPACE,
    AGENT_SERVICE_ACCOUNT,
    TokenIssuer,
    TokenSubject,
)
from tests.conftest import Stack
from tests.live import wait_for

NODE = "gpu-server-1"
URL = "/api/v1/agent/reports"
SA_SETTINGS = {
    "agent_auth": "serviceaccount",
    "agent_service_account": f"{AGENT_NAMESPACE}:{AGENT_SERVICE_ACCOUNT}",
}


def report(node: str) -> dict[str, object]:
    return {
        "schema": 1,
        "node": node,
        "collected_at": datetime.now(UTC).isoformat(),
        "source": "none",
        "error": "no GPU reader configured",
    }


def post(stack: Stack, node: str, token: str) -> httpx.Response:
    return stack.client.post(URL, json=report(node), headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split", agents=False, **SA_SETTINGS)


def test_simulated_agents_report_with_their_own_reviewed_tokens(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("host-split", agents=False, **SA_SETTINGS)
    stack.simulator.configure_agents(
        report_to=stack.dashboard_url, token=stack.simulator.tokens.agent_token, interval_s=0.2
    )
    wait_for(
        lambda: stack.summary()["totals"]["physical_gpus"] == 4,  # type: ignore[index]
        what="the reviewed agent's report",
    )
    reviews = stack.simulator.tokens.reviews
    wait_for(lambda: stack.simulator.tokens.reviews == reviews, timeout_s=2, what="no re-review")
    assert 1 <= reviews <= 2  # one review per token, cached (a race may cost a second)


def test_token_of_one_node_cannot_report_for_another(stack: Stack) -> None:
    token = stack.simulator.tokens.agent_token("gpu-server-2")
    response = post(stack, NODE, token)
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "This agent's token is for node 'gpu-server-2', not 'gpu-server-1'."
    )
    assert post(stack, NODE, stack.simulator.tokens.agent_token(NODE)).status_code == 202


def test_token_without_node_name_is_bound_through_its_pod(stack: Stack) -> None:
    """Before Kubernetes 1.30 the review names no node: the pod's spec.nodeName decides."""
    gone = TokenSubject(AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, "no-such-pod", "u", node=None)
    token = stack.simulator.tokens.issue(gone, audience="gpu-slots")
    assert post(stack, NODE, token).status_code == 401  # a token of a vanished pod binds nothing

    stack.simulator.registry.create(
        NAMESPACE,
        None,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NAMESPACE}},
    )
    stack.simulator.create_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "gpu-slots-agent-x", "namespace": AGENT_NAMESPACE},
            "spec": {"nodeName": NODE, "containers": [{"name": "agent", "image": "a"}]},
        }
    )
    created = stack.simulator.get("Pod", "gpu-slots-agent-x", AGENT_NAMESPACE)
    assert created is not None
    bound = TokenSubject(
        AGENT_NAMESPACE,
        AGENT_SERVICE_ACCOUNT,
        "gpu-slots-agent-x",
        created["metadata"]["uid"],
        node=None,
    )
    token = stack.simulator.tokens.issue(bound, audience="gpu-slots")
    assert post(stack, NODE, token).status_code == 202
    assert post(stack, "gpu-server-2", token).status_code == 403


def test_tokens_of_other_accounts_audiences_or_issuers_are_401(stack: Stack) -> None:
    issuer = stack.simulator.tokens
    other_account = TokenSubject("default", "builder", "p", "u", node=NODE)
    assert post(stack, NODE, issuer.issue(other_account, audience="gpu-slots")).status_code == 401
    ours = TokenSubject(AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, "p", "u", node=NODE)
    assert post(stack, NODE, issuer.issue(ours, audience="vault")).status_code == 401
    forged = TokenIssuer().issue(ours, audience="gpu-slots")  # another signing key
    assert post(stack, NODE, forged).status_code == 401
    expired = issuer.issue(ours, audience="gpu-slots", ttl_s=-1)
    assert post(stack, NODE, expired).status_code == 401


def test_review_unavailable_is_503_and_nothing_is_stored(stack: Stack) -> None:
    token = stack.simulator.tokens.agent_token(NODE)
    stack.simulator.set_unavailable(True)
    try:
        response = post(stack, NODE, token)
    finally:
        stack.simulator.set_unavailable(False)
    assert response.status_code == 503
    assert "Cannot check the agent token now" in response.json()["detail"]


def test_a_refused_token_is_not_reviewed_again_at_once(stack: Stack) -> None:
    """A flood of bad tokens costs the API server one review per token and 10 s."""
    ours = TokenSubject(AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, "p", "u", node=NODE)
    token = TokenIssuer().issue(ours, audience="gpu-slots")  # another signing key
    before = stack.simulator.tokens.reviews
    for _ in range(5):
        assert post(stack, NODE, token).status_code == 401
    assert stack.simulator.tokens.reviews == before + 1


def test_tokens_that_cannot_be_the_agents_are_refused_without_a_review(stack: Stack) -> None:
    """Issue 33: 100 garbage `x.y.N` tokens made 100 TokenReviews."""
    issuer = stack.simulator.tokens
    ours = TokenSubject(AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, "p", "u", node=NODE)
    other_account = TokenSubject("default", "builder", "p", "u", node=NODE)
    refused = [
        *(f"x.y.{n}" for n in range(100)),
        issuer.issue(other_account, audience="gpu-slots"),
        issuer.issue(ours, audience="vault"),
        issuer.issue(ours, audience="gpu-slots", ttl_s=-1),
        "a" * 20_000 + ".b.c",
    ]
    before = issuer.reviews
    for token in refused:
        answer = post(stack, NODE, token)
        assert answer.status_code == 401, token[:40]
    assert issuer.reviews == before  # none reached the API server
