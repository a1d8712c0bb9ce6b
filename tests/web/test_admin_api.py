"""The plugin-config JSON API on the real dashboard over the simulated cluster."""

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
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TO_TS4 = {
    "mode": "time-slicing",
    "replicas": 4,
    "renameByDefault": False,
    "failRequestsGreaterThanOne": True,
    "deleteConfigMap": False,
}
BLIND = {"force": "true"}  # an apply without its preview's token, asked for (else 428)


@pytest.fixture
def admin(make_stack: Callable[..., Stack]) -> Stack:
    """host-split with the admin API, once the node's 2 slots and its report are in."""
    stack = make_stack("host-split")
    wait_for(lambda: node_slots(stack) == (2, "nvidia.com/gpu"), what="2 slots in the snapshot")
    wait_for(
        lambda: stack.summary()["totals"]["physical_gpus"] == 4,  # type: ignore[index]
        what="the agent report of gpu-server-1",
    )
    return stack


def node_slots(stack: Stack) -> tuple[int | None, str] | None:
    response = stack.client.get(f"/api/v1/nodes/{NODE}")
    if response.status_code != 200:
        return None
    body = response.json()
    node = body.get("node", body)
    return node.get("capacity"), node.get("resource")


def put(stack: Stack, body: dict[str, Any], *, dry_run: bool = False) -> httpx.Response:
    params = {"dryRun": "true"} if dry_run else BLIND
    return stack.client.put("/api/v1/plugin/config", json=body, params=params, headers=BEARER)


def config(stack: Stack) -> dict[str, Any]:
    response = stack.client.get("/api/v1/plugin/config")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def gpu_slots_events(stack: Stack) -> list[Any]:
    api_client = make_api_client(host=stack.simulator.url)
    try:
        items = client.CoreV1Api(api_client).list_namespaced_event(NS).items
    finally:
        api_client.close()
    return [e for e in items if (e.reason or "").startswith("GpuSlots")]


def test_admin_api_get_config_shows_basic_mode(admin: Stack) -> None:
    body = config(admin)
    assert body["mode"] == "basic"
    assert body["daemonset"]["found"] is True
    assert body["configmap"]["exists"] is False
    assert body["operatorManaged"] is False
    assert body["previous"] is None


def test_admin_api_dry_run_previews_two_to_eight_and_writes_nothing(admin: Stack) -> None:
    response = put(admin, TO_TS4, dry_run=True)

    assert response.status_code == 200, response.text
    preview = response.json()
    assert preview["dryRun"] is True and preview["changed"] is True
    assert preview["serverDryRun"]["ok"] is True
    row = next(n for n in preview["nodes"] if n["node"] == NODE)
    assert (row["before"], row["after"]) == (2, 8)
    assert (
        "+    - name: nvidia.com/gpu" in preview["diff"]["configmap"]
        or "replicas: 4" in (preview["diff"]["configmap"])
    )
    assert "CONFIG_FILE" in preview["diff"]["daemonset"]
    assert config(admin)["configmap"]["exists"] is False
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is None


def test_admin_api_switch_and_rollback_change_slots_and_leave_events(admin: Stack) -> None:
    response = put(admin, TO_TS4)
    assert response.status_code == 200, response.text
    assert response.json()["after"]["replicas"] == 4
    wait_for(lambda: node_slots(admin) == (8, "nvidia.com/gpu"), what="8 slots after rollout")
    assert config(admin)["previous"]["mode"] == "basic"

    rolled = admin.client.post("/api/v1/plugin/config/rollback", params=BLIND, headers=BEARER)

    assert rolled.status_code == 200, rolled.text
    wait_for(lambda: node_slots(admin) == (2, "nvidia.com/gpu"), what="2 slots after rollback")
    reasons = sorted(e.reason for e in gpu_slots_events(admin))
    assert reasons == ["GpuSlotsConfigChanged", "GpuSlotsConfigRolledBack"]


def test_admin_api_replicas_change_and_rename_then_basic_with_delete(admin: Stack) -> None:
    assert put(admin, TO_TS4).status_code == 200
    wait_for(lambda: node_slots(admin) == (8, "nvidia.com/gpu"), what="8 slots")

    assert put(admin, {**TO_TS4, "replicas": 3}).status_code == 200
    wait_for(lambda: node_slots(admin) == (6, "nvidia.com/gpu"), what="6 slots")

    assert put(admin, {**TO_TS4, "replicas": 3, "renameByDefault": True}).status_code == 200
    wait_for(lambda: node_slots(admin) == (6, "nvidia.com/gpu.shared"), what="6 shared slots")

    assert put(admin, {**TO_TS4, "replicas": 3, "renameByDefault": False}).status_code == 200
    wait_for(lambda: node_slots(admin) == (6, "nvidia.com/gpu"), what="rename off")

    basic = {"mode": "basic", "deleteConfigMap": True}
    response = put(admin, basic)
    assert response.status_code == 200, response.text
    assert response.json()["configmapAction"] == "delete"
    wait_for(lambda: node_slots(admin) == (2, "nvidia.com/gpu"), what="basic again")
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is None


def test_admin_api_basic_keeps_configmap_without_delete(admin: Stack) -> None:
    assert put(admin, TO_TS4).status_code == 200
    response = put(admin, {"mode": "basic"})
    assert response.status_code == 200
    assert response.json()["configmapAction"] == "keep"
    wait_for(lambda: node_slots(admin) == (2, "nvidia.com/gpu"), what="basic again")
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is not None


def test_admin_api_no_change_says_so(admin: Stack) -> None:
    response = put(admin, {"mode": "basic"})
    assert response.status_code == 200
    assert response.json()["changed"] is False
    assert "Nothing to change" in response.json()["detail"]
    korean = admin.client.put(
        "/api/v1/plugin/config",
        json={"mode": "basic"},
        params={"lang": "ko", **BLIND},
        headers=BEARER,
    )
    assert korean.json()["detail"].startswith("변경할 내용이 없습니다: 플러그인이 이미")
    missing = admin.client.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing"},
        params={"lang": "ko", **BLIND},
        headers=BEARER,
    )
    assert (missing.status_code, missing.json()["detail"]) == (
        422,
        "시분할에는 replicas가 필요합니다.",
    )


def test_admin_api_conflict_between_preview_and_apply_writes_nothing(admin: Stack) -> None:
    preview = put(admin, TO_TS4, dry_run=True).json()
    api_client = make_api_client(host=admin.simulator.url)
    client.AppsV1Api(api_client).patch_namespaced_daemon_set(
        "nvidia-device-plugin-daemonset", NS, {"metadata": {"labels": {"edited": "yes"}}}
    )
    api_client.close()
    admin.simulator.reset_request_counts()

    response = put(admin, {**TO_TS4, "expectedToken": preview["token"]})

    assert response.status_code == 409
    detail = response.json()["detail"]
    assert "Changed since the preview" in detail
    assert f"daemonset/{NS}/nvidia-device-plugin-daemonset: metadata.labels changed" in detail
    assert admin.simulator.request_count("create") == 0
    assert admin.simulator.request_count("update") == 0
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is None


def test_admin_api_status_write_after_preview_is_no_conflict(admin: Stack) -> None:
    preview = put(admin, TO_TS4, dry_run=True).json()
    api_client = make_api_client(host=admin.simulator.url)
    apps = client.AppsV1Api(api_client)
    before = apps.read_namespaced_daemon_set("nvidia-device-plugin-daemonset", NS)
    apps.patch_namespaced_daemon_set_status(
        "nvidia-device-plugin-daemonset", NS, {"status": {"numberMisscheduled": 1}}
    )
    after = apps.read_namespaced_daemon_set("nvidia-device-plugin-daemonset", NS)
    api_client.close()
    assert after.metadata.resource_version != before.metadata.resource_version

    response = put(admin, {**TO_TS4, "expectedToken": preview["token"]})

    assert response.status_code == 200, response.text
    assert config(admin)["mode"] == "time-slicing"


def test_admin_api_spec_edit_after_preview_names_the_field(admin: Stack) -> None:
    preview = put(admin, TO_TS4, dry_run=True).json()
    api_client = make_api_client(host=admin.simulator.url)
    client.AppsV1Api(api_client).patch_namespaced_daemon_set(
        "nvidia-device-plugin-daemonset",
        NS,
        {"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 3}}}},
    )
    api_client.close()

    response = put(admin, {**TO_TS4, "expectedToken": preview["token"]})

    assert response.status_code == 409
    assert "spec.updateStrategy changed (generation" in response.json()["detail"]
    assert config(admin)["mode"] == "basic"


def test_admin_api_a_token_that_is_not_one_is_refused(admin: Stack) -> None:
    response = put(admin, {**TO_TS4, "expectedToken": "not-a-token!"})

    assert response.status_code == 422
    assert "freshness token is not one a preview handed out" in response.json()["detail"]
    assert config(admin)["mode"] == "basic"


def test_admin_api_old_resource_version_field_is_refused_by_name(admin: Stack) -> None:
    response = put(admin, {**TO_TS4, "expectedResourceVersions": {"daemonset": "1"}})

    assert response.status_code == 422
    assert "expectedResourceVersions" in response.text


def test_admin_api_failed_daemonset_write_restores_and_says_so(admin: Stack) -> None:
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=500)

    response = put(admin, TO_TS4)

    assert response.status_code == 502
    assert "the cluster is as before" in response.json()["detail"]
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is None
    assert config(admin)["mode"] == "basic"


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({**TO_TS4, "replicas": 1}, 422, "between 2 and 64"),
        ({**TO_TS4, "replicas": 65}, 422, "between 2 and 64"),
        ({"mode": "time-slicing"}, 422, "replicas is required"),
        ({**TO_TS4, "deleteConfigMap": True}, 422, "only when switching to basic"),
        ({**TO_TS4, "replicas": "4"}, 422, ""),
        ({**TO_TS4, "mode": "mps"}, 422, ""),
        ({**TO_TS4, "extra": 1}, 422, ""),
    ],
)
def test_admin_api_bad_bodies_are_422(
    admin: Stack, body: dict[str, Any], status: int, text: str
) -> None:
    response = put(admin, body)
    assert response.status_code == status
    assert text in str(response.json()["detail"])


def test_admin_api_rollback_without_previous_is_404(admin: Stack) -> None:
    response = admin.client.post("/api/v1/plugin/config/rollback", params=BLIND, headers=BEARER)
    assert response.status_code == 404
    assert "No previous config" in response.json()["detail"]


def test_admin_api_operator_managed_daemonset_is_409(admin: Stack) -> None:
    api_client = make_api_client(host=admin.simulator.url)
    client.AppsV1Api(api_client).patch_namespaced_daemon_set(
        "nvidia-device-plugin-daemonset",
        NS,
        {"metadata": {"labels": {"app.kubernetes.io/managed-by": "gpu-operator"}}},
    )
    api_client.close()

    response = put(admin, TO_TS4)

    assert response.status_code == 409
    assert "ClusterPolicy" in response.json()["detail"]
    wait_for(lambda: config(admin)["operatorManaged"], what="operatorManaged in GET")


def test_admin_api_allocation_policy_needs_v020_and_is_written_when_it_has_it(
    admin: Stack,
) -> None:
    refused = put(admin, {**TO_TS4, "allocation_policy": "packed"})
    assert refused.status_code == 422
    assert "needs device plugin v0.20.0 or later" in refused.json()["detail"]
    assert "v0.18.2" in refused.json()["detail"]
    korean = admin.client.put(
        "/api/v1/plugin/config",
        json={**TO_TS4, "allocationPolicy": "packed"},
        params=BLIND,
        headers={**BEARER, "Accept-Language": "ko"},
    )
    assert korean.status_code == 422
    assert korean.json()["detail"] == (
        "sharedDevicesAllocationPolicy에는 디바이스 플러그인 v0.20.0 이상이 필요하지만 이 "
        "DaemonSet은 v0.18.2을(를) 실행합니다. 아무것도 쓰지 않았습니다."
    )

    api_client = make_api_client(host=admin.simulator.url)
    apps = client.AppsV1Api(api_client)
    ds = apps.read_namespaced_daemon_set("nvidia-device-plugin-daemonset", NS)
    ds.spec.template.spec.containers[0].image = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    apps.replace_namespaced_daemon_set("nvidia-device-plugin-daemonset", NS, ds)
    api_client.close()

    applied = put(admin, {**TO_TS4, "allocationPolicy": "packed"})
    assert applied.status_code == 200, applied.text
    stored = admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS)
    assert stored is not None
    text = stored["data"]["config.yaml"]
    assert "sharedDevicesAllocationPolicy: packed" in text
    bad = put(admin, {**TO_TS4, "allocationPolicy": "spread"})
    assert bad.status_code == 422 and "must be one of distributed, packed" in bad.json()["detail"]
