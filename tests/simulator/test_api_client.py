"""The simulated API server through the real `kubernetes` client: verbs, selectors, errors."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from app.simulator.world.cluster import SimulatedCluster
from tests.live import wait_for


def _configmap(name: str, data: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data or {"k": "v"},
    }


def test_discovery_version_reports_1_32(api: client.ApiClient) -> None:
    version = client.VersionApi(api).get_code()
    assert (version.major, version.minor, version.git_version) == ("1", "32", "v1.32.0")


def test_discovery_resource_lists_name_groupversion_and_status(sim: SimulatedCluster) -> None:
    import httpx

    core = httpx.get(f"{sim.url}/api/v1").json()
    apps_list = httpx.get(f"{sim.url}/apis/apps/v1").json()
    groups = httpx.get(f"{sim.url}/apis").json()
    assert core["groupVersion"] == "v1" and apps_list["groupVersion"] == "apps/v1"
    names = {r["name"] for r in core["resources"]}
    assert {"nodes", "nodes/status", "pods", "pods/status", "configmaps", "events"} <= names
    assert {"namespaces", "namespaces/status"} <= names
    assert {"daemonsets", "daemonsets/status"} <= {r["name"] for r in apps_list["resources"]}
    assert [g["name"] for g in groups["groups"]] == [
        "apps",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "batch",
        "admissionregistration.k8s.io",
        "node.k8s.io",
        "resource.k8s.io",
    ]
    dra = httpx.get(f"{sim.url}/apis/resource.k8s.io/v1").json()
    assert dra["groupVersion"] == "resource.k8s.io/v1"
    assert {(r["name"], r["namespaced"]) for r in dra["resources"]} == {
        ("deviceclasses", False),
        ("resourceslices", False),
        ("resourceclaims", True),
        ("resourceclaims/status", True),
        ("resourceclaimtemplates", True),
    }


def test_get_node_has_advertised_gpus(core: client.CoreV1Api) -> None:
    node = core.read_node("gpu-server-1")
    assert node.status.allocatable["nvidia.com/gpu"] == "2"
    assert node.status.capacity["nvidia.com/gpu"] == "2"


def test_get_missing_pod_is_404_status(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("nope", "ml")
    assert caught.value.status == 404
    assert '"reason":"NotFound"' in caught.value.body


def test_list_pods_all_namespaces_has_kind_and_resource_version(core: client.CoreV1Api) -> None:
    pods = core.list_pod_for_all_namespaces()
    names = {(p.metadata.namespace, p.metadata.name) for p in pods.items}
    assert ("ml", "notebook-0") in names
    assert int(pods.metadata.resource_version) > 0


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", {"sel-a"}),
        ("tier==web", {"sel-a"}),
        ("tier!=web", {"sel-b", "sel-c"}),
        ("tier in (web,db)", {"sel-a", "sel-b"}),
        ("tier notin (web)", {"sel-b", "sel-c"}),
        ("tier", {"sel-a", "sel-b"}),
        ("!tier", {"sel-c"}),
        ("tier=db,env=prod", {"sel-b"}),
    ],
)
def test_list_label_selector_filters(
    core: client.CoreV1Api, selector: str, expected: set[str]
) -> None:
    for name, labels in (
        ("sel-a", {"tier": "web", "group": "sel"}),
        ("sel-b", {"tier": "db", "env": "prod", "group": "sel"}),
        ("sel-c", {"group": "sel"}),
    ):
        try:
            core.create_namespaced_config_map("default", _configmap(name, **labels))
        except ApiException as exc:
            assert exc.status == 409
    found = core.list_namespaced_config_map("default", label_selector=f"group=sel,{selector}")
    assert {c.metadata.name for c in found.items} == expected


def test_list_field_selectors_filter_pods(core: client.CoreV1Api) -> None:
    by_node = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=gpu-server-1")
    running = core.list_pod_for_all_namespaces(field_selector="status.phase=Running")
    by_name = core.list_namespaced_pod("ml", field_selector="metadata.name=notebook-0")
    other_ns = core.list_pod_for_all_namespaces(field_selector="metadata.namespace!=ml")
    assert len(by_node.items) == 2  # the plugin pod and the notebook
    assert {p.metadata.name for p in by_name.items} == {"notebook-0"}
    assert all(p.status.phase == "Running" for p in running.items)
    assert all(p.metadata.namespace != "ml" for p in other_ns.items)


def test_create_generate_name_sets_uid_timestamp_and_rv(core: client.CoreV1Api) -> None:
    body = {"metadata": {"generateName": "gen-"}, "data": {"a": "b"}}
    first = core.create_namespaced_config_map("default", body)
    second = core.create_namespaced_config_map("default", body)
    assert first.metadata.name.startswith("gen-") and first.metadata.name != second.metadata.name
    assert first.metadata.uid and first.metadata.creation_timestamp is not None
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)


def test_create_existing_is_409_already_exists(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _configmap("dup"))
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", _configmap("dup"))
    assert caught.value.status == 409 and "AlreadyExists" in caught.value.body


def test_create_in_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("no-such-ns", _configmap("x"))
    assert caught.value.status == 404


def test_create_invalid_name_is_422(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", _configmap("Not_Valid"))
    assert caught.value.status == 422 and "Invalid" in caught.value.body


def test_create_daemonset_selector_mismatch_is_422(apps: client.AppsV1Api) -> None:
    body = {
        "metadata": {"name": "bad-ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "metadata": {"labels": {"app": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    with pytest.raises(ApiException) as caught:
        apps.create_namespaced_daemon_set("default", body)
    assert caught.value.status == 422


def test_replace_with_stale_resource_version_is_409(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", _configmap("stale"))
    fresh = core.read_namespaced_config_map("stale", "default")
    fresh.data = {"k": "v2"}
    updated = core.replace_namespaced_config_map("stale", "default", fresh)
    created.data = {"k": "v3"}
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("stale", "default", created)
    assert caught.value.status == 409 and "Conflict" in caught.value.body
    assert core.read_namespaced_config_map("stale", "default").data == {"k": "v2"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)


def test_dry_run_create_patch_delete_store_nothing(core: client.CoreV1Api) -> None:
    before = core.list_namespaced_config_map("default").metadata.resource_version
    answer = core.create_namespaced_config_map("default", _configmap("dry"), dry_run="All")
    assert answer.metadata.name == "dry"
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("dry", "default")
    core.create_namespaced_config_map("default", _configmap("dry2"))
    rv = core.read_namespaced_config_map("dry2", "default").metadata.resource_version
    patched = core.patch_namespaced_config_map(
        "dry2", "default", {"data": {"k": "changed"}}, dry_run="All"
    )
    assert patched.data == {"k": "changed"}
    core.delete_namespaced_config_map("dry2", "default", dry_run="All")
    after = core.read_namespaced_config_map("dry2", "default")
    assert after.data == {"k": "v"} and after.metadata.resource_version == rv
    assert int(before) < int(rv)


def test_dry_run_invalid_is_still_422(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", _configmap("BAD"), dry_run="All")
    assert caught.value.status == 422


def test_patch_merge_and_json_patch_change_data(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _configmap("patchy", {"a": "1", "b": "2"}))
    core.patch_namespaced_config_map("patchy", "default", {"data": {"b": None, "c": "3"}})
    assert core.read_namespaced_config_map("patchy", "default").data == {"a": "1", "c": "3"}
    # A list body makes the client send application/json-patch+json.
    core.patch_namespaced_config_map(
        "patchy", "default", [{"op": "replace", "path": "/data/a", "value": "9"}]
    )
    assert core.read_namespaced_config_map("patchy", "default").data == {"a": "9", "c": "3"}


def test_strategic_patch_merges_containers_and_env_by_name(apps: client.AppsV1Api) -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "env": [{"name": "EXTRA", "value": "1"}],
                        }
                    ]
                }
            }
        }
    }
    ds = apps.patch_namespaced_daemon_set(
        "nvidia-device-plugin-daemonset", "kube-system", patch, dry_run="All"
    )
    container = ds.spec.template.spec.containers[0]
    env = {e.name: e.value for e in container.env}
    assert container.image.endswith("v0.18.2")
    assert env["EXTRA"] == "1" and "NVIDIA_VISIBLE_DEVICES" in env


def test_update_main_resource_ignores_status_and_status_ignores_spec(
    core: client.CoreV1Api,
) -> None:
    node = core.read_node("gpu-server-1")
    node.status.allocatable["nvidia.com/gpu"] = "99"
    node.metadata.labels["touched"] = "yes"
    core.replace_node("gpu-server-1", node)
    after = core.read_node("gpu-server-1")
    assert after.status.allocatable["nvidia.com/gpu"] == "2"
    assert after.metadata.labels["touched"] == "yes"
    core.patch_node_status(
        "gpu-server-1",
        {
            "status": {"conditions": [{"type": "Extra", "status": "True"}]},
            "metadata": {"labels": {"ignored": "x"}},
        },
    )
    after = core.read_node("gpu-server-1")
    assert "ignored" not in after.metadata.labels
    assert any(c.type == "Extra" for c in after.status.conditions)


def test_daemonset_generation_bumps_only_on_spec_change(apps: client.AppsV1Api) -> None:
    name, ns = "nvidia-device-plugin-daemonset", "kube-system"
    before = apps.read_namespaced_daemon_set(name, ns).metadata.generation
    apps.patch_namespaced_daemon_set(name, ns, {"metadata": {"annotations": {"a": "b"}}})
    assert apps.read_namespaced_daemon_set(name, ns).metadata.generation == before
    apps.patch_namespaced_daemon_set(name, ns, {"spec": {"minReadySeconds": 1}})
    after = apps.read_namespaced_daemon_set(name, ns)
    assert after.metadata.generation == before + 1
    assert after.status.observed_generation is not None


def test_delete_returns_object_then_404(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _configmap("doomed"))
    core.delete_namespaced_config_map("doomed", "default")
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("doomed", "default")
    assert caught.value.status == 404


def test_namespace_and_event_kinds_are_served(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team-x"}})
    assert core.read_namespace("team-x").status.phase == "Active"
    events = core.list_namespaced_event("kube-system").items
    assert any(e.reason == "SuccessfulCreate" for e in events)


def _watch_events(func: Any, *, stop_after: int, **kwargs: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    w = watch.Watch()
    for event in w.stream(func, timeout_seconds=5, **kwargs):
        seen.append(event)
        if len(seen) >= stop_after:
            w.stop()
    return seen


def test_watch_from_resource_version_streams_added_modified_deleted(
    core: client.CoreV1Api,
) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    results: list[list[dict[str, Any]]] = []
    thread = threading.Thread(
        target=lambda: results.append(
            _watch_events(
                core.list_namespaced_config_map,
                stop_after=3,
                namespace="default",
                resource_version=rv,
                field_selector="metadata.name=watched",
            )
        )
    )
    thread.start()
    core.create_namespaced_config_map("default", _configmap("unrelated"))
    core.create_namespaced_config_map("default", _configmap("watched"))
    core.patch_namespaced_config_map("watched", "default", {"data": {"k": "2"}})
    core.delete_namespaced_config_map("watched", "default")
    thread.join(timeout=10)
    assert [e["type"] for e in results[0]] == ["ADDED", "MODIFIED", "DELETED"]
    assert results[0][1]["object"].data == {"k": "2"}


def test_watch_without_resource_version_starts_with_current_objects(
    core: client.CoreV1Api,
) -> None:
    events = _watch_events(core.list_node, stop_after=1)
    assert events[0]["type"] == "ADDED" and events[0]["object"].metadata.name == "gpu-server-1"


def test_watch_from_expired_resource_version_raises_410(
    core: client.CoreV1Api, sim: SimulatedCluster
) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    sim.expire_watches()
    core.create_namespaced_config_map("default", _configmap("after-expiry"))
    with pytest.raises(ApiException) as caught:
        _watch_events(
            core.list_namespaced_config_map, stop_after=1, namespace="default", resource_version=rv
        )
    assert caught.value.status == 410


def test_drop_watches_ends_streams_and_client_reconnects(
    core: client.CoreV1Api, sim: SimulatedCluster
) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    watcher = watch.Watch()
    seen: list[str] = []

    def consume() -> None:
        for event in watcher.stream(
            core.list_namespaced_config_map, namespace="default", resource_version=rv
        ):
            seen.append(event["object"].metadata.name)
            watcher.stop()

    opened = sim.request_count("watch", "ConfigMap")
    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    wait_for(lambda: sim.request_count("watch", "ConfigMap") > opened, what="the watch")
    wait_for(lambda: sim.drop_watches() >= 1, what="an open stream to drop")
    wait_for(
        lambda: sim.request_count("watch", "ConfigMap") > opened + 1, what="the client to reconnect"
    )
    core.create_namespaced_config_map("default", _configmap("after-drop"))
    thread.join(timeout=10)
    assert seen == ["after-drop"]


def test_watch_on_a_named_object_url_sees_only_that_object(
    sim: SimulatedCluster, core: client.CoreV1Api
) -> None:
    import httpx

    core.create_namespaced_config_map("default", _configmap("one"))
    url = f"{sim.url}/api/v1/namespaces/default/configmaps/one"
    with httpx.stream("GET", url, params={"watch": "1", "timeoutSeconds": "1"}) as response:
        lines = [line for line in response.iter_lines() if line]
    assert len(lines) == 1 and '"name":"one"' in lines[0] and '"type":"ADDED"' in lines[0]
