"""Hostile inputs of issue 48, each created as a tenant, an admin or an outsider would.

Every one got a 500 or a stall before: a pending pod asking for `"1Ei"` GPUs, a forged
change record whose `before.replicas` is `"four"`, a freshness token of 12,000 brackets,
and a YAML alias bomb beside the time-slicing block a preview asks for. Each now gets its
documented answer, the snapshot stays fresh, and `/healthz` answers in under a second.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client

from app.domain.changes.durable import RECORD_LABEL
from app.kube.client import make_api_client
from tests.conftest import ADMIN_TOKEN, Stack
from tests.web.test_admin_pages_i18n import csrf_of, log_in
from tests.web.test_gpu_split_api import GIVE_GPU_1

BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
NODE = "gpu-server-1"
TENANT = "team-a"
HISTORY_NS = "kube-system"  # the history's namespace: the plugin's, unless set
DEEP_TOKEN = base64.urlsafe_b64encode(b"[" * 12_000).decode().rstrip("=")


def _healthz_fast(stack: Stack) -> None:
    started = time.monotonic()
    assert stack.client.get("/healthz").status_code == 200
    assert time.monotonic() - started < 1.0


def _fresh(stack: Stack) -> None:
    """A snapshot built after the hostile input: its moment moves on and it is not stale."""
    first = stack.summary()["generated_at"]
    stack.wait(lambda: stack.summary()["generated_at"] != first, what="a later snapshot")
    assert stack.summary()["stale"] is False


@pytest.fixture
def tenant(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("host-split")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 4,  # type: ignore[index]
        what="agent report of gpu-server-1",
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}}
    created = httpx.post(f"{stack.simulator.url}/api/v1/namespaces", json=namespace, timeout=10)
    assert created.status_code == 201, created.text
    return stack


def _pending_pod(name: str, gpu: str) -> Any:
    """A pod no scheduler has bound (no nodeName), asking for `gpu` GPUs."""
    resources = {"limits": {"nvidia.com/gpu": gpu}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {"containers": [{"name": "main", "image": "cuda:12", "resources": resources}]},
    }


@pytest.mark.parametrize("gpu", ["1Ei", "99999999999999999999"])
def test_a_pending_pod_with_a_huge_gpu_limit_leaves_usage_answering(
    tenant: Stack, gpu: str
) -> None:
    url = f"{tenant.simulator.url}/api/v1/namespaces/{TENANT}/pods"
    created = httpx.post(url, json=_pending_pod("greedy", gpu), timeout=10)
    assert created.status_code == 201, created.text  # the API server stores both values
    ordinary = httpx.post(url, json=_pending_pod("waiting", "1"), timeout=10)
    assert ordinary.status_code == 201, ordinary.text

    def set_aside() -> bool:  # in a snapshot that has seen both pods (usage reads it alone)
        findings = tenant.client.get("/api/v1/findings").json()["findings"]
        objects = {f["evidence"].get("object") for f in findings if f["code"] == "object-set-aside"}
        pending = tenant.summary()["totals"]["pending"]  # type: ignore[index]
        return f"Pod {TENANT}/greedy" in objects and pending == 1

    tenant.wait(set_aside, what="the greedy pod set aside with a finding, the other pending")
    for by in ("namespace", "owner", "node"):
        answer = tenant.client.get("/api/v1/usage", params={"by": by})
        assert answer.status_code == 200, answer.text
        pending = {p["pod"]: p["slots"] for p in answer.json()["pods"] if p["pending"]}
        assert pending == {f"{TENANT}/waiting": 1}  # the greedy pod wants nothing counted
    assert tenant.client.get("/usage").status_code == 200
    _fresh(tenant)
    _healthz_fast(tenant)


def _forge_record(stack: Stack, change_id: str, kind: str, before: dict[str, Any]) -> None:
    """A well-formed record ConfigMap, as anyone who may create ConfigMaps there writes it."""
    record = {
        "id": change_id,
        "kind": kind,
        "action": "change",
        "at": "2026-01-01T00:00:00Z",
        "user": "admin",
        "summary": "forged",
        "node": NODE if kind == "split" else None,
        "before": before,
        "after": {},
    }
    body: Any = {
        "metadata": {"name": f"gpu-slots-change-{change_id}", "labels": {RECORD_LABEL: kind}},
        "data": {"record.json": json.dumps(record)},
    }
    core = client.CoreV1Api(make_api_client(host=stack.simulator.url))
    core.create_namespaced_config_map(HISTORY_NS, body)


@pytest.mark.parametrize(
    ("kind", "before"),
    [
        ("mode", {"mode": "time-slicing", "replicas": "four"}),
        ("mode", {"mode": "time-slicing", "replicas": "9" * 5000}),
        ("split", {"own": True, "mode": "basic", "kubernetes_gpus": ["x"], "replicas": "four"}),
        ("split", {"own": True, "mode": "basic", "kubernetes_gpus": [7], "replicas": 1}),
    ],
)
def test_a_forged_record_of_the_wrong_kind_of_value_is_unreadable_and_refused(
    host_split: Stack, kind: str, before: dict[str, Any]
) -> None:
    _forge_record(host_split, "forged-1", kind, before)
    listed = host_split.client.get("/api/v1/changes", headers=BEARER)
    assert listed.status_code == 200, listed.text
    unreadable = listed.json()["unreadable"]
    assert [u["name"] for u in unreadable] == ["gpu-slots-change-forged-1"]
    assert "before." in unreadable[0]["reason"]  # names the field that is wrong

    answer = host_split.client.post(
        "/api/v1/changes/forged-1/rollback", params={"dryRun": "true"}, headers=BEARER
    )
    assert answer.status_code == 409, answer.text  # as 1e400 and NaN are
    log_in(host_split)
    assert host_split.client.get("/admin/changes").status_code == 200
    _fresh(host_split)
    _healthz_fast(host_split)


def test_a_token_of_12000_brackets_is_a_422_for_every_change_kind(host_split: Stack) -> None:
    assert len(DEEP_TOKEN) == 16_000
    sends = [
        ("put", "/api/v1/plugin/config", {"mode": "time-slicing", "replicas": 4}),
        ("put", f"/api/v1/nodes/{NODE}/gpu-split", {**GIVE_GPU_1, "confirmHostProcesses": True}),
    ]
    for method, path, body in sends:
        answer = host_split.client.request(
            method, path, json={**body, "expectedToken": DEEP_TOKEN}, headers=BEARER
        )
        assert answer.status_code == 422, (path, answer.text)
        assert "token" in answer.json()["detail"].lower()

    log_in(host_split)
    csrf = csrf_of(host_split.client.get("/admin/plugin").text)
    form = {"mode": "time-slicing", "replicas": "4", "csrf_token": csrf, "token": DEEP_TOKEN}
    page = host_split.client.post("/admin/plugin/apply", data=form)
    assert page.status_code == 422, page.text[:500]
    assert 'data-testid="admin-error"' in page.text
    _fresh(host_split)
    _healthz_fast(host_split)


def _alias_bomb() -> str:
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    return bomb  # 9**9 strings once expanded


SLICING_8 = (
    "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: false\n"
    "    failRequestsGreaterThanOne: false\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 8\n"
)


def test_an_alias_bomb_beside_the_asked_block_previews_fast(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("time-slicing")
    url = f"{stack.simulator.url}/api/v1/namespaces/kube-system/configmaps/"
    url += "nvidia-device-plugin-config"
    current = httpx.get(url, timeout=10).json()
    current["data"] = {"config.yaml": SLICING_8 + _alias_bomb()}
    assert httpx.put(url, json=current, timeout=10).status_code == 200

    healthz: list[float] = []

    def probe() -> None:
        with httpx.Client(base_url=stack.dashboard_url, timeout=20) as prober:
            for _ in range(5):
                started = time.monotonic()
                assert prober.get("/healthz").status_code == 200
                healthz.append(time.monotonic() - started)
                time.sleep(0.05)

    prober = threading.Thread(target=probe)
    prober.start()
    started = time.monotonic()
    preview = stack.client.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 8},
        params={"dryRun": "true"},
        headers=BEARER,
    )
    took = time.monotonic() - started
    prober.join(timeout=20)
    assert preview.status_code == 200, preview.text
    warnings = " ".join(preview.json()["warnings"])
    assert "aliases bound (20000)" in warnings  # the config is refused, then replaced
    assert took < 1.0  # 5.6-7.0 s before: PyYAML's expanded trees were compared
    assert len(healthz) == 5 and max(healthz) < 1.0
    _fresh(stack)


def test_a_token_of_one_change_kind_never_applies_another(host_split: Stack) -> None:
    """The token is a freshness check of what one preview read (docs/ADMIN.md)."""
    mode = {"mode": "time-slicing", "replicas": 4}
    split = {**GIVE_GPU_1, "confirmHostProcesses": True}
    split_path = f"/api/v1/nodes/{NODE}/gpu-split"
    previews = {
        "mode": host_split.client.put(
            "/api/v1/plugin/config", json=mode, params={"dryRun": "true"}, headers=BEARER
        ),
        "split": host_split.client.put(
            split_path, json=split, params={"dryRun": "true"}, headers=BEARER
        ),
    }
    for preview in previews.values():
        assert preview.status_code == 200, preview.text
    tokens = {kind: answer.json()["token"] for kind, answer in previews.items()}
    crossed = [
        ("/api/v1/plugin/config", {**mode, "expectedToken": tokens["split"]}),
        (split_path, {**split, "expectedToken": tokens["mode"]}),
    ]
    for path, body in crossed:
        answer = host_split.client.put(path, json=body, headers=BEARER)
        assert answer.status_code == 422, (path, answer.text)  # either way round
        assert "another change's preview" in answer.json()["detail"]
    assert host_split.client.get("/api/v1/changes", headers=BEARER).json()["changes"] == []
