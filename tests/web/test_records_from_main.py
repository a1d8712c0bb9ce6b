"""Change records written before round 5 still read, list and roll back (issue 47).

Round 5 types a record's `before` and `after` (the plugin's settings, a node's split) and
spells both kinds' keys in camelCase; clusters already hold records written before, a
split's keys in snake_case (`kubernetes_gpus`). records_from_main.json holds one mode and
one split record exactly as main wrote them at 297a1c2 (its mode_record and split_record,
stamped, then record_configmap, run on that commit), byte for byte. They are stored as that
dashboard stored them, signed with its key, then read, listed and rolled back by this code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from app.domain.changes.signing import signed, signing_key
from app.kube.client import make_api_client
from tests.conftest import ADMIN_TOKEN, Stack, stack_settings
from tests.live import wait_for
from tests.web.test_admin_pages_i18n import log_in
from tests.web.test_gpu_split_api import BLIND, GIVE_GPU_1, GPU, SHARED, allocatable, reported

NODE = "gpu-server-1"
NS = "kube-system"  # the history's namespace: the plugin's, unless set
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FROM_MAIN: dict[str, Any] = json.loads(
    (Path(__file__).parent / "records_from_main.json").read_text(encoding="utf-8")
)


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split")


def _store(stack: Stack, kind: str) -> str:
    """Keep main's record of `kind` as main kept it (signed with the dashboard's key); its id."""
    stored = FROM_MAIN[kind]
    body: Any = signed(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": stored["name"], "namespace": NS, "labels": stored["labels"]},
            "data": stored["data"],
        },
        signing_key(str(stack_settings().session_secret)),
    )
    api_client = make_api_client(host=stack.simulator.url)
    try:
        client.CoreV1Api(api_client).create_namespaced_config_map(NS, body)
    finally:
        api_client.close()
    return str(json.loads(stored["data"]["record.json"])["id"])


def _listed(stack: Stack) -> dict[str, Any]:
    answer = stack.client.get("/api/v1/changes", headers=BEARER)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["unreadable"] == []
    return {c["id"]: c for c in body["changes"]}


def _mode(stack: Stack) -> str:
    return str(stack.client.get("/api/v1/plugin/config", headers=BEARER).json()["mode"])


def test_a_mode_record_main_wrote_is_read_verified_and_rolled_back(stack: Stack) -> None:
    made = stack.client.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params=BLIND,
        headers=BEARER,
    )
    assert made.status_code == 200, made.text
    old = _store(stack, "mode")

    listed = _listed(stack)
    assert listed[old]["verified"] is True  # main's signature holds over main's bytes
    assert listed[old]["before"] == {
        "mode": "basic",
        "replicas": 1,
        "resource": "nvidia.com/gpu",
        "renameByDefault": False,
        "failRequestsGreaterThanOne": False,
        "error": None,
    }
    assert listed[old]["rollout"]["changeId"] == old
    log_in(stack)
    page = stack.client.get("/admin/changes?lang=en")
    assert page.status_code == 200
    assert f'data-id="{old}" data-action="change" data-verified="true"' in page.text

    undo = stack.client.post(f"/api/v1/changes/{old}/rollback", params=BLIND, headers=BEARER)
    assert undo.status_code == 200, undo.text
    assert (undo.json()["kind"], undo.json()["after"]["mode"]) == ("rollback", "basic")
    assert _mode(stack) == "basic"
    assert _listed(stack)[undo.json()["changeId"]]["rollsBack"] == old


def test_a_split_record_main_wrote_in_snake_case_reads_in_camel_case_and_rolls_back(
    stack: Stack,
) -> None:
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    applied = stack.client.put(
        f"/api/v1/nodes/{NODE}/gpu-split",
        json={**GIVE_GPU_1, "confirmHostProcesses": True},
        params=BLIND,
        headers=BEARER,
    )
    assert applied.status_code == 200, applied.text
    wait_for(lambda: allocatable(stack) == {NODE: "3"}, what="allocatable 3 on gpu-server-1")
    assert "kubernetes_gpus" in FROM_MAIN["split"]["data"]["record.json"]  # main's spelling
    old = _store(stack, "split")

    listed = _listed(stack)
    assert listed[old]["verified"] is True
    assert listed[old]["before"] == {
        "daemonset": SHARED,
        "own": False,
        "kubernetesGpus": [GPU[2], GPU[3]],
        "mode": "basic",
        "replicas": 1,
    }
    log_in(stack)
    page = stack.client.get(f"/admin/nodes/{NODE}/gpus?lang=en")
    assert page.status_code == 200
    assert f'data-change="{old}"' in page.text

    undo = stack.client.post(f"/api/v1/changes/{old}/rollback", params=BLIND, headers=BEARER)
    assert undo.status_code == 200, undo.text
    assert undo.json()["after"]["daemonset"] == SHARED
    wait_for(lambda: allocatable(stack) == {NODE: "2"}, what="allocatable back to 2")
    view = stack.client.get(f"/api/v1/nodes/{NODE}/gpu-split").json()
    assert view["daemonset"] == {"name": SHARED, "namespace": NS, "own": False}
