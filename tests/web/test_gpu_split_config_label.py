"""Per-node sharing on a config-manager install (Helm chart style): the node label decides.

The dashboard is configured with the `clusters` scenario's Helm release
(nvidia-device-plugin/nvidia-device-plugin, ConfigMap nvidia-device-plugin-configs with
keys default and ts4); gpu-ts-3 picks ts4 by its label nvidia.com/device-plugin.config.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client

from app.kube.client import make_api_client
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for
from tests.web.test_admin_pages_i18n import csrf_of, log_in

NODE = "gpu-ts-3"
NS = "nvidia-device-plugin"
CONFIGS = "nvidia-device-plugin-configs"
LABEL = "nvidia.com/device-plugin.config"
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _core(stack: Stack) -> tuple[client.CoreV1Api, Any]:
    api_client = make_api_client(host=stack.simulator.url)
    return client.CoreV1Api(api_client), api_client


def allocatable(stack: Stack) -> dict[str, str]:
    core, api_client = _core(stack)
    try:
        nodes = core.list_node().items
    finally:
        api_client.close()
    return {n.metadata.name: (n.status.allocatable or {}).get("nvidia.com/gpu", "-") for n in nodes}


def node_label(stack: Stack) -> str | None:
    core, api_client = _core(stack)
    try:
        labels = core.read_node(NODE).metadata.labels or {}
    finally:
        api_client.close()
    value = labels.get(LABEL)
    return str(value) if value is not None else None


def config_keys(stack: Stack) -> list[str]:
    core, api_client = _core(stack)
    try:
        data = core.read_namespaced_config_map(CONFIGS, NS).data or {}
    finally:
        api_client.close()
    return sorted(data)


def plugin_pods(stack: Stack) -> list[str]:
    core, api_client = _core(stack)
    try:
        pods = core.list_namespaced_pod(NS, field_selector=f"spec.nodeName={NODE}").items
    finally:
        api_client.close()
    return sorted(p.metadata.name for p in pods)


def put(stack: Stack, body: dict[str, Any], *, dry_run: bool = False) -> httpx.Response:
    params = {"dryRun": "true"} if dry_run else {"force": "true"}  # else 428: no token
    return stack.client.put(
        f"/api/v1/nodes/{NODE}/gpu-split", json=body, params=params, headers=BEARER
    )


def reported(stack: Stack) -> bool:
    response = stack.client.get(f"/api/v1/nodes/{NODE}")
    return response.status_code == 200 and response.json()["node"]["physical_gpus"] == 4


@pytest.fixture
def helm(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack(
        "clusters",
        kubernetes_device_plugin_name="nvidia-device-plugin",
        kubernetes_device_plugin_namespace=NS,
        plugin_configmap_name=CONFIGS,
    )
    wait_for(lambda: reported(stack), what="the agent report of gpu-ts-3")
    return stack


def test_a_mode_change_sets_the_node_label_and_adds_a_key_and_rollback_restores_it(
    helm: Stack,
) -> None:
    view = helm.client.get(f"/api/v1/nodes/{NODE}/gpu-split").json()
    assert (view["perNodeConfig"], view["configKey"], view["mode"], view["replicas"]) == (
        True,
        "ts4",
        "time-slicing",
        4,
    )
    gpus = [g["uuid"] for g in view["gpus"]]
    assert [g["role"] for g in view["gpus"]] == ["kubernetes"] * 4
    before = allocatable(helm)
    assert before[NODE] == "16"
    pods = plugin_pods(helm)
    assert len(pods) == 1

    body = {"kubernetesGpus": gpus, "mode": "time-slicing", "replicas": 2}
    preview = put(helm, body, dry_run=True)
    assert preview.status_code == 200, preview.text
    plan = preview.json()
    assert [(w["action"], w["kind"], w["name"]) for w in plan["writes"]] == [
        ("replace", "ConfigMap", CONFIGS),
        ("label", "Node", NODE),
    ]
    assert (plan["slotsBefore"], plan["slotsAfter"]) == (16, 8)
    assert plan["after"]["config_key"] == "gpu-slots-ts-2"
    assert "+  gpu-slots-ts-2: |" in plan["writes"][0]["diff"]
    assert plan["serverDryRunOk"] is True
    assert config_keys(helm) == ["default", "ts4"]  # the preview wrote nothing

    applied = put(helm, body)
    assert applied.status_code == 200, applied.text
    wait_for(lambda: allocatable(helm)[NODE] == "8", what="gpu-ts-3 at 4 GPUs x 2")
    assert allocatable(helm) == {**before, NODE: "8"}
    assert node_label(helm) == "gpu-slots-ts-2"
    assert config_keys(helm) == ["default", "gpu-slots-ts-2", "ts4"]
    assert plugin_pods(helm) == pods  # config-manager restarts the plugin in place

    basic = put(helm, {"kubernetesGpus": gpus, "mode": "basic"})
    assert basic.status_code == 200, basic.text
    assert basic.json()["after"]["config_key"] == "default"  # same content: reused
    wait_for(lambda: allocatable(helm)[NODE] == "4", what="gpu-ts-3 basic")
    assert config_keys(helm) == ["default", "gpu-slots-ts-2", "ts4"]

    history = helm.client.get("/api/v1/changes").json()["changes"]
    assert [(c["kind"], c["node"]) for c in history] == [("split", NODE), ("split", NODE)]
    undo = helm.client.post(
        f"/api/v1/changes/{history[1]['id']}/rollback", params={"force": "true"}, headers=BEARER
    )
    assert undo.status_code == 200, undo.text
    wait_for(lambda: allocatable(helm)[NODE] == "16", what="gpu-ts-3 back on ts4")
    assert node_label(helm) == "ts4"
    assert allocatable(helm) == before


def test_a_different_gpu_set_is_refused_with_the_reason(helm: Stack) -> None:
    view = helm.client.get(f"/api/v1/nodes/{NODE}/gpu-split").json()
    gpus = [g["uuid"] for g in view["gpus"]]
    refused = put(helm, {"kubernetesGpus": gpus[1:], "mode": "basic"})
    assert refused.status_code == 409, refused.text
    assert "config-manager, which selects no GPUs" in refused.json()["detail"]
    assert node_label(helm) == "ts4"
    assert config_keys(helm) == ["default", "ts4"]


def test_the_editor_page_explains_the_label_and_previews_with_the_gpus_kept(helm: Stack) -> None:
    page = f"/admin/nodes/{NODE}/gpus"
    log_in(helm)
    html = helm.client.get(page).text
    assert "config by the node label nvidia.com/device-plugin.config (now: ts4)" in html
    hidden = re.findall(r'<input type="hidden" name="(to:[^"]+)" value="([^"]+)">', html)
    assert len(hidden) == 4  # the GPUs cannot be moved here, but go with the form
    assert {place for _, place in hidden} == {"kubernetes"}
    form = {**dict(hidden), "mode": "time-slicing", "replicas": "2", "csrf_token": csrf_of(html)}
    preview = helm.client.post(f"{page}/preview", data=form)
    assert preview.status_code == 200, preview.text
    assert "Slots on this node: 16 → 8" in preview.text
    assert "replace ConfigMap/nvidia-device-plugin-configs" in preview.text
    korean = helm.client.get(page, headers={"Accept-Language": "ko-KR,ko;q=0.9"}).text
    assert "노드 레이블 nvidia.com/device-plugin.config(현재: ts4)" in korean


def test_nodes_of_another_install_and_dra_are_refused_up_front_on_the_demo(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("demo")  # configured: kube-system; gpu-ts-7 runs the Helm release
    node = "gpu-ts-7"
    wait_for(
        lambda: stack.client.get(f"/api/v1/nodes/{node}/gpu-split").status_code == 200,
        what="the agent report of gpu-ts-7",
    )
    view = stack.client.get(f"/api/v1/nodes/{node}/gpu-split").json()
    assert view["editable"] is False
    assert view["refusal"]["code"] == "other-plugin-install"
    assert (view["daemonset"]["namespace"], view["daemonset"]["name"]) == (
        "nvidia-device-plugin",
        "nvidia-device-plugin",
    )
    assert view["refusal"]["changeInstead"].startswith("helm upgrade <release> -n nvidia-device")
    gpus = [g["uuid"] for g in view["gpus"]]
    refused = stack.client.put(
        f"/api/v1/nodes/{node}/gpu-split",
        params={"dryRun": "true"},
        json={"kubernetesGpus": gpus, "mode": "basic"},
        headers=BEARER,
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["detail"].startswith(
        f"Node {node} runs the plugin of nvidia-device-plugin/nvidia-device-plugin, not the "
        "configured kube-system/nvidia-device-plugin-daemonset"
    )

    dra = stack.client.get("/api/v1/nodes/gpu-dra-9/gpu-split").json()
    assert (dra["editable"], dra["refusal"]["code"]) == (False, "dra-node")
    # the editor's refusal in the asked language: Korean words, not the English sentence
    ko = stack.client.get("/api/v1/nodes/gpu-ts-7/gpu-split", params={"lang": "ko"}).json()
    assert ko["refusal"]["reason"].startswith(f"노드 {node}")
    assert view["refusal"]["reason"].startswith(f"Node {node} runs the plugin of")
    ko_page = stack.client.get("/admin/nodes/gpu-dra-9/gpus?lang=ko").text
    assert "노드 gpu-dra-9의 GPU는 디바이스 플러그인이 아니라 DRA 드라이버" in ko_page
    missing = stack.client.get("/api/v1/nodes/no-such-node/gpu-split", params={"lang": "ko"})
    assert missing.status_code == 404
    assert missing.json()["detail"] == "노드 no-such-node이(가) 클러스터에 없습니다."
    put_dra = stack.client.put(
        "/api/v1/nodes/gpu-dra-9/gpu-split",
        params={"dryRun": "true"},
        json={"kubernetesGpus": [g["uuid"] for g in dra["gpus"]][:1], "mode": "basic"},
        headers=BEARER,
    )
    assert put_dra.status_code == 409 and "DRA" in put_dra.json()["detail"]
    own = "nvidia-device-plugin-daemonset-gpu-dra-9"
    assert stack.simulator.get("DaemonSet", own, "kube-system") is None

    overview = stack.client.get("/").text
    assert 'data-testid="edit-gpus-gpu-ts-7"' not in overview
    assert 'data-testid="edit-gpus-gpu-dra-9"' not in overview
    assert 'data-testid="edit-gpus-gpu-server-1"' in overview
    editor = stack.client.get(f"/admin/nodes/{node}/gpus").text
    assert 'data-testid="split-refused"' in editor and 'data-testid="gpus-form"' in editor
    assert 'data-testid="preview-button"' not in editor
