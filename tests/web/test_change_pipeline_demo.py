"""Issue 28 on the demo through the real stack: previews equal results, a way past gpu-ws-5.

Each change kind (mode switch, its rollback, a split, the return to the shared DaemonSet)
is previewed, applied, and once its rollout is done every GPU node advertises exactly
the preview's after-figure; nodes of the Helm install and the DRA node are never changed.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.simulator.plugin.rollout import RolloutPace
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for
from tests.web.test_demo_page_done_when import PACE_S, _start, _stop

BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
NS = "kube-system"
SHARED = "nvidia-device-plugin-daemonset"
GPU_SERVER_1 = [
    "GPU-3f1c5a2e-8b4d-4e6f-9a7b-0c1d2e3f4a50",
    "GPU-7a2b9c4d-1e3f-4a5b-8c6d-2e4f6a8b0c61",
    "GPU-b5c7d9e1-2f4a-4b6c-9d8e-3f5a7b9c1d72",
    "GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83",
]
SCENARIOS = Path(__file__).resolve().parents[2] / "app" / "simulator" / "world" / "scenarios"
NOT_OURS = {"gpu-ts-7": "other-install", "gpu-mig-8": "other-install", "gpu-dra-9": "dra"}


@pytest.fixture
def paced() -> Iterator[Stack]:
    stack = _start(pace=RolloutPace(terminating_s=PACE_S, creating_s=PACE_S))
    yield stack
    _stop(stack)


def advertised(stack: Stack) -> dict[str, int | None]:
    nodes = stack.client.get("/api/v1/nodes").json()["nodes"]
    return {n["name"]: n["allocatable"] for n in nodes if n["gpu_node"]}


def rollout(stack: Stack) -> dict[str, Any]:
    body: dict[str, Any] = stack.client.get("/api/v1/plugin/rollout").json()
    return body


def _call(
    stack: Stack,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    *,
    dry: bool,
    force: bool = False,
) -> Any:
    """`?dryRun=true` when `dry`; `force`: an apply without the preview's token, asked for."""
    params = {"dryRun": "true"} if dry else {"force": "true"} if force else {}
    response: httpx.Response = stack.client.request(
        method, path, json=body, params=params, headers=BEARER
    )
    assert response.status_code == 200, response.text
    return response.json()


def _mode_preview_then_apply(
    stack: Stack, method: str, path: str, body: dict[str, Any]
) -> dict[str, int | None]:
    """Preview, apply with its token, passing the failing node; the preview's after-figures."""
    now = advertised(stack)
    preview = _call(stack, method, path, body, dry=True)
    rows = {r["node"]: r for r in preview["nodes"]}
    assert {n: r["before"] for n, r in rows.items()} == now  # "now" is what nodes advertise
    for node, reason in NOT_OURS.items():
        assert rows[node]["unchanged"] == reason and rows[node]["after"] == now[node]
    assert preview["failingNodes"] == ["gpu-ws-5"], preview["failingNodes"]
    assert preview["holdsAtMaxUnavailable"] is True, preview["maxUnavailable"]
    applied = _call(
        stack,
        method,
        path,
        {**body, "expectedToken": preview["token"], "passFailingNodes": True},
        dry=False,
    )
    assert applied["changed"] is True
    return {n: r["after"] for n, r in rows.items()}


def _settled_equal(stack: Stack, expected: dict[str, int | None], *, what: str) -> None:
    wait_for(lambda: rollout(stack)["state"] == "done", timeout_s=30, what=f"{what}: done")
    deadline = time.monotonic() + 15
    while advertised(stack) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert advertised(stack) == expected, what


def _latest_change(stack: Stack) -> dict[str, Any]:
    change: dict[str, Any] = stack.client.get("/api/v1/changes").json()["changes"][0]
    return change


def _until_put_back(stack: Stack) -> None:
    wait_for(
        lambda: (rollout(stack)["max_unavailable"] or {}).get("restoredAt") is not None,
        timeout_s=15,
        what="maxUnavailable put back",
    )


def test_demo_mode_switch_and_rollback_previews_equal_results(paced: Stack) -> None:
    after = _mode_preview_then_apply(
        paced, "PUT", "/api/v1/plugin/config", {"mode": "time-slicing", "replicas": 4}
    )
    _settled_equal(paced, after, what="switch to time-slicing x4")
    _until_put_back(paced)
    ds = paced.simulator.get("DaemonSet", SHARED, NS)
    assert ds is not None
    assert ds["spec"]["updateStrategy"].get("rollingUpdate", {}).get("maxUnavailable", 1) == 1
    # the change's history record says so too, and is still signed by this dashboard
    put_back = rollout(paced)["max_unavailable"]["restoredAt"]
    record = wait_for(
        lambda: (c := _latest_change(paced))["rollout"]["maxUnavailable"]["restoredAt"] and c,
        timeout_s=15,
        what="the history record to say maxUnavailable was put back",
    )
    assert record["rollout"]["maxUnavailable"] == {"from": 1, "to": 2, "restoredAt": put_back}
    assert record["verified"] is True

    back = _mode_preview_then_apply(paced, "POST", "/api/v1/plugin/config/rollback", {})
    _settled_equal(paced, back, what="rollback")


def test_demo_split_and_return_previews_equal_results(paced: Stack) -> None:
    before = advertised(paced)
    body = {"kubernetes_gpus": GPU_SERVER_1[1:], "mode": "time-slicing", "replicas": 2}
    path = "/api/v1/nodes/gpu-server-1/gpu-split"
    preview = _call(paced, "PUT", path, {**body, "confirmHostProcesses": True}, dry=True)
    assert preview["slotsBefore"] == before["gpu-server-1"]
    _call(
        paced,
        "PUT",
        path,
        {**body, "confirmHostProcesses": True, "expectedToken": preview["token"]},
        dry=False,
    )
    expected = {**before, "gpu-server-1": preview["slotsAfter"]}
    wait_for(lambda: advertised(paced) == expected, timeout_s=20, what="the split's figures")

    back = _call(paced, "DELETE", path, None, dry=True)
    assert back["slotsBefore"] == preview["slotsAfter"]
    _call(paced, "DELETE", path, {"expectedToken": back["token"]}, dry=False)
    wait_for(
        lambda: advertised(paced) == {**before, "gpu-server-1": back["slotsAfter"]},
        timeout_s=20,
        what="the return's figures",
    )
    assert back["slotsAfter"] == before["gpu-server-1"]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_rollout_api_without_query_tells_the_page_story(paced: Stack, lang: str) -> None:
    # a blind API write without passFailingNodes: the rollout holds at gpu-ws-5
    ts4 = {"mode": "time-slicing", "replicas": 4}
    _call(paced, "PUT", "/api/v1/plugin/config", ts4, dry=False, force=True)

    def ws5(body: dict[str, Any]) -> dict[str, Any]:
        return next(n for n in body["nodes"] if n["node"] == "gpu-ws-5")

    held = wait_for(
        lambda: (body := rollout(paced))["blocked_by"] and ws5(body)["state"] == "failing" and body,
        timeout_s=20,
        what="held by gpu-ws-5, its new pod failing too",
    )
    assert isinstance(held, dict)
    assert (held["state"], held["broken_before"]) == ("stuck", ["gpu-ws-5"])
    assert ws5(held)["broken_before"] is True

    page = paced.client.get(f"/admin/plugin/rollout?lang={lang}").text
    assert 'data-state="stuck"' in page
    row = page.split('data-testid="rollout-gpu-ws-5"', 1)[1].split("</tr>", 1)[0]
    words = {"en": "already failing before the change", "ko": "변경 전부터 실패 중"}[lang]
    assert words in row
    fragment = paced.client.get(f"/admin/plugin/rollout/fragment?lang={lang}").text
    assert 'data-state="stuck"' in fragment and words in fragment


OPERATOR_NS = "gpu-operator"


def _mixed_scenario(folder: Path) -> Path:
    """The demo (static, Helm with config-manager, MIG, DRA, a failing node) with gpu-server-6
    moved to a GPU Operator install: static + Helm + Operator + DRA side by side."""
    scenario = yaml.safe_load((SCENARIOS / "demo.yaml").read_text())
    node = next(n for n in scenario["nodes"] if n["name"] == "gpu-server-6")
    node["labels"] = {"nvidia.com/gpu.deploy.device-plugin": "true"}
    shared = next(
        o
        for o in scenario["objects"]
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == SHARED
    )
    operator = copy.deepcopy(shared)
    operator["metadata"] = {
        "name": "nvidia-device-plugin-daemonset",
        "namespace": OPERATOR_NS,
        "labels": {"app": "nvidia-device-plugin-daemonset"},
        "ownerReferences": [
            {
                "apiVersion": "nvidia.com/v1",
                "kind": "ClusterPolicy",
                "name": "cluster-policy",
                "uid": "6a1c0f3e-0000-4000-8000-000000000001",
                "controller": True,
            }
        ],
    }
    template = operator["spec"]["template"]
    operator["spec"]["selector"] = {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}}
    template["metadata"]["labels"] = {"app": "nvidia-device-plugin-daemonset"}
    template["spec"]["nodeSelector"] = {"nvidia.com/gpu.deploy.device-plugin": "true"}
    template["spec"]["containers"][0]["env"] = [{"name": "FAIL_ON_INIT_ERROR", "value": "false"}]
    scenario["objects"] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NS}},
        *scenario["objects"],
        operator,
    ]
    path = folder / "mixed.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


@pytest.fixture
def mixed(tmp_path: Path) -> Iterator[Stack]:
    stack = _start(
        pace=RolloutPace(terminating_s=PACE_S, creating_s=PACE_S),
        scenario=_mixed_scenario(tmp_path),
    )
    yield stack
    _stop(stack)


def test_mixed_cluster_previews_equal_results_and_refuses_other_installs(mixed: Stack) -> None:
    operator_node = _call(mixed, "GET", "/api/v1/nodes/gpu-server-6/gpu-split", None, dry=False)
    assert (operator_node["editable"], operator_node["refusal"]["code"]) == (
        False,
        "operator-managed",
    )
    assert "ClusterPolicy" in operator_node["refusal"]["changeInstead"]
    before = advertised(mixed)

    after = _mode_preview_then_apply(
        mixed, "PUT", "/api/v1/plugin/config", {"mode": "time-slicing", "replicas": 4}
    )
    assert after["gpu-server-6"] == before["gpu-server-6"]  # the Operator's node stays
    _settled_equal(mixed, after, what="switch on the mixed cluster")
    _until_put_back(mixed)
    back = _mode_preview_then_apply(mixed, "POST", "/api/v1/plugin/config/rollback", {})
    _settled_equal(mixed, back, what="rollback on the mixed cluster")
    assert advertised(mixed) == before


def test_no_remedy_links_to_an_editor_that_refuses(mixed: Stack) -> None:
    findings = mixed.client.get("/api/v1/findings").json()["findings"]
    linked = {
        node
        for item in findings
        for node in re.findall(r"/admin/nodes/([a-z0-9.-]+)/gpus", item.get("remedy") or "")
    }
    assert linked  # the demo's findings do send the admin to editors
    for node in sorted(linked):
        view = _call(mixed, "GET", f"/api/v1/nodes/{node}/gpu-split", None, dry=False)
        assert view["editable"] is True, (node, view["refusal"])
