"""The real agent with a token bound to its node: accepted for its node, refused for another."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.node_tokens import node_token
from app.simulator.apiserver.tokenreview import AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT
from tests.agent.fake_nvml import FakeGpu, FakeNvml
from tests.agent.test_end_to_end import NODE, run_once
from tests.conftest import Stack

SECRET = "node-secret-0123456789abcdef"


def test_agent_with_its_projected_token_reports_and_another_nodes_token_is_refused(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack(
        "host-split",
        agents=False,
        agent_auth="serviceaccount",
        agent_service_account=f"{AGENT_NAMESPACE}:{AGENT_SERVICE_ACCOUNT}",
    )
    nvml = FakeNvml([FakeGpu(uuid="GPU-aaaa")])

    status, _ = run_once(stack, tmp_path, nvml, token_text=stack.simulator.tokens.agent_token(NODE))
    assert status == 0

    other = stack.simulator.tokens.agent_token("gpu-server-2")
    (tmp_path / "other").mkdir()
    status, log = run_once(stack, tmp_path / "other", nvml, token_text=other)
    assert status != 0
    assert "this token is for another node" in log


def test_host_service_agent_with_its_node_token_reports(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack(
        "host-split", agents=False, agent_auth="node-token", agent_node_secret=SECRET
    )
    nvml = FakeNvml([FakeGpu(uuid="GPU-aaaa")])
    status, log = run_once(stack, tmp_path, nvml, token_text=node_token(SECRET, NODE))
    assert status == 0, log
    stack.wait(
        lambda: stack.client.get(f"/api/v1/nodes/{NODE}").json()["node"]["physical_gpus"] == 1,
        what="the host-service agent's report in the snapshot",
    )
