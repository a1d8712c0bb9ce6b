"""The change history proves its origin (issue 33).

Anyone who can create ConfigMaps in the history's namespace can write an object shaped like a
change record. Such a record is listed as unverified, is never rolled back in one click (the
API refuses it without a preview and `confirmUnverified`, the node editor offers no button),
is offered only in its own scope, and never makes retention delete a genuine record. A
malformed record is listed as unreadable, never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from app.domain.changes.durable import RECORD_LABEL, record_configmap
from app.domain.changes.history import ChangeRecord, side_from_json
from app.kube.client import make_api_client
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for
from tests.web.test_admin_pages_i18n import log_in
from tests.web.test_gpu_split_api import BLIND, GIVE_GPU_1, reported

NODE = "gpu-server-1"
NS = "kube-system"  # the history's namespace: the plugin's, unless set
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TS4 = {"mode": "time-slicing", "replicas": 4}


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack("host-split", change_history_keep=3)


def _core(stack: Stack) -> client.CoreV1Api:
    return client.CoreV1Api(make_api_client(host=stack.simulator.url))


def _forge(stack: Stack, change_id: str, **fields: Any) -> None:
    """A ConfigMap exactly as the dashboard writes a record, without its signature."""
    values: dict[str, Any] = {
        "id": change_id,
        "kind": "mode",
        "action": "change",
        "at": datetime(2099, 1, 1, tzinfo=UTC),
        "user": "admin",
        "summary": "basic -> time-slicing x64",
        "before": {"mode": "time-slicing", "replicas": 64},
        "after": {"mode": "basic"},
        **fields,
    }
    for side in ("before", "after"):
        values[side] = side_from_json(values["kind"], side, values[side])
    body: Any = record_configmap(ChangeRecord(**values), namespace=NS)
    _core(stack).create_namespaced_config_map(NS, body)


def _changes(stack: Stack) -> dict[str, Any]:
    answer = stack.client.get("/api/v1/changes", headers=BEARER)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _mode(stack: Stack) -> str:
    return str(stack.client.get("/api/v1/plugin/config", headers=BEARER).json()["mode"])


def test_forged_record_is_unverified_and_needs_preview_and_confirmation(stack: Stack) -> None:
    made = stack.client.put("/api/v1/plugin/config", json=TS4, params=BLIND, headers=BEARER)
    assert made.status_code == 200, made.text
    _forge(stack, "forged-1", before={"mode": "basic"}, after=TS4)

    listed = {c["id"]: c["verified"] for c in _changes(stack)["changes"]}
    assert listed == {made.json()["changeId"]: True, "forged-1": False}
    page = stack.client.get("/admin/changes?lang=en").text
    assert 'data-id="forged-1" data-action="change" data-verified="false"' in page
    assert 'data-testid="change-unverified"' in page

    refused = stack.client.post("/api/v1/changes/forged-1/rollback", params=BLIND, headers=BEARER)
    assert refused.status_code == 409, refused.text
    assert "not signed by this dashboard" in refused.json()["detail"]
    refused_ko = stack.client.post(
        "/api/v1/changes/forged-1/rollback", params={"lang": "ko", **BLIND}, headers=BEARER
    )
    assert refused_ko.status_code == 409
    assert "이 대시보드가 서명하지 않았습니다" in refused_ko.json()["detail"]
    assert _mode(stack) == "time-slicing"  # nothing written

    preview = stack.client.post("/api/v1/changes/forged-1/rollback?dryRun=true", headers=BEARER)
    assert preview.status_code == 200, preview.text
    confirmed = stack.client.post(
        "/api/v1/changes/forged-1/rollback",
        json={"confirmUnverified": True, "expectedToken": preview.json()["token"]},
        headers=BEARER,
    )
    assert confirmed.status_code == 200, confirmed.text
    assert _mode(stack) == "basic"


def test_node_editor_offers_no_mode_record_and_no_one_click_rollback_of_a_forged_one(
    stack: Stack,
) -> None:
    _forge(stack, "forged-mode", node=NODE)  # a mode record tagged with the node
    before = {"own": True, "kubernetes_gpus": [], "mode": "basic"}
    _forge(stack, "forged-split", kind="split", node=NODE, before=before, after={})
    log_in(stack)

    page = stack.client.get(f"/admin/nodes/{NODE}/gpus?lang=en").text
    assert "forged-mode" not in page  # a mode record is never offered on a node's editor
    assert 'data-change="forged-split"' in page
    assert 'data-testid="change-unverified"' in page
    assert 'action="/admin/changes/forged-split/rollback' not in page  # no one-click button
    csrf = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    clicked = stack.client.post(
        "/admin/changes/forged-split/rollback", data={"node": NODE, "csrf_token": csrf}
    )
    assert clicked.status_code == 409
    assert "not signed by this dashboard" in clicked.text


def test_a_retention_flood_of_forged_records_deletes_no_genuine_record(stack: Stack) -> None:
    genuine = []
    for replicas in (2, 3):
        made = stack.client.put(
            "/api/v1/plugin/config",
            json={**TS4, "replicas": replicas},
            params=BLIND,
            headers=BEARER,
        )
        genuine.append(made.json()["changeId"])
    for n in range(60):  # dated 2099: the newest by far
        _forge(stack, f"flood-{n:03}")
    # this one prunes
    made = stack.client.put("/api/v1/plugin/config", json=TS4, params=BLIND, headers=BEARER)
    genuine.append(made.json()["changeId"])

    listed = _changes(stack)["changes"]
    kept = [c["id"] for c in listed if c["verified"]]
    assert sorted(kept) == sorted(genuine)  # keep=3: all three genuine records stay
    assert sum(1 for c in listed if not c["verified"]) == 60  # and the forged ones are not ours


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("digits", '{"id": "digits", "kind": "mode", "before": {"replicas": ' + "9" * 5000 + "}}"),
        (
            "huge-float",
            '{"id": "huge-float", "at": "2026-01-01T00:00:00Z", "kind": "mode", '
            '"action": "change", "before": {"replicas": 1e400}, "after": {}}',
        ),
        (
            "nan",
            '{"id": "nan", "at": "2026-01-01T00:00:00Z", "kind": "mode", '
            '"action": "change", "before": {"replicas": NaN}, "after": {}}',
        ),
        ("deep", "[" * 50_000 + "]" * 50_000),
        (
            "nested",
            json.dumps(
                {
                    "id": "nested",
                    "at": "2026-01-01T00:00:00Z",
                    "kind": "mode",
                    "action": "change",
                    "before": {"a": [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]},
                    "after": {},
                }
            ),
        ),
    ],
)
def test_a_malformed_record_is_unreadable_never_a_500(stack: Stack, name: str, raw: str) -> None:
    body: Any = {
        "metadata": {"name": f"gpu-slots-change-{name}", "labels": {RECORD_LABEL: "mode"}},
        "data": {"record.json": raw},
    }
    _core(stack).create_namespaced_config_map(NS, body)
    listing = _changes(stack)
    assert [u["name"] for u in listing["unreadable"]] == [f"gpu-slots-change-{name}"]
    log_in(stack)
    for path in ("/admin/changes", f"/admin/nodes/{NODE}/gpus"):
        assert stack.client.get(path).status_code == 200, path


def test_a_split_beside_a_malformed_record_answers_200_and_is_recorded(stack: Stack) -> None:
    """A split answered 500 after writing its objects: pruning choked on a deep record."""
    body: Any = {
        "metadata": {"name": "gpu-slots-change-deep", "labels": {RECORD_LABEL: "split"}},
        "data": {"record.json": "[" * 50_000 + "]" * 50_000},
    }
    _core(stack).create_namespaced_config_map(NS, body)
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    applied = stack.client.put(
        f"/api/v1/nodes/{NODE}/gpu-split",
        json={**GIVE_GPU_1, "confirmHostProcesses": True},
        params=BLIND,
        headers=BEARER,
    )
    assert applied.status_code == 200, applied.text
    listed = _changes(stack)
    assert [c["id"] for c in listed["changes"]] == [applied.json()["changeId"]]
    assert [u["name"] for u in listed["unreadable"]] == ["gpu-slots-change-deep"]
