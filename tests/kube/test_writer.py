"""The writer against the simulated cluster: dry runs, applies, conflicts, restores, Events."""

from __future__ import annotations

import dataclasses
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from kubernetes import client

from app.domain.changes.history import change_id
from app.domain.changes.models import ChangePlan, ChangeRequest, ConfigMapAction
from app.domain.changes.plan import plan_change
from app.domain.changes.records import Authored, mode_record
from app.domain.plugin_target import PluginTarget
from app.errors import ConflictError
from app.kube.client import make_api_client
from app.kube.concurrent import ConcurrentChange
from app.kube.writer import ApplyFailed, ApplyResult, PluginWriter
from app.simulator.world.cluster import SimulatedCluster
from tests import factories as f
from tests.live import wait_for

NS = "kube-system"
DS = "nvidia-device-plugin-daemonset"
CM = "nvidia-device-plugin-config"
NODE = "gpu-server-1"


@pytest.fixture
def simulator() -> Iterator[SimulatedCluster]:
    cluster = SimulatedCluster("host-split")
    cluster.start(host="127.0.0.1", port=0)
    yield cluster
    cluster.stop()


@pytest.fixture
def api(simulator: SimulatedCluster) -> Iterator[client.ApiClient]:
    api_client = make_api_client(host=simulator.url)
    yield api_client
    api_client.close()


@pytest.fixture
def writer(api: client.ApiClient) -> PluginWriter:
    return PluginWriter(api, plugin=PluginTarget(namespace=NS, name=DS), configmap_name=CM)


def apply_as(writer: PluginWriter, plan: ChangePlan, user: str) -> ApplyResult:
    """Apply `plan` with the record a service would build for `user`."""
    change = change_id(f.NOW, secrets.token_hex(3))  # one id per change, as a service makes
    record = mode_record(plan, Authored(change, user, f.NOW))
    return writer.apply(plan, record=record)


def ts(replicas: int = 4) -> ChangeRequest:
    return ChangeRequest(mode="time-slicing", replicas=replicas)


def back_to_basic(writer: PluginWriter) -> ChangePlan:
    """The undo of a switch from basic, as the change list plans it, deleting the ConfigMap."""
    objects = writer.read()
    request = ChangeRequest(mode="basic", delete_configmap=True)
    plan = plan_change(objects.daemonset, objects.configmap, request, configmap_name=CM)
    return dataclasses.replace(plan, kind="rollback")


def allocatable(simulator: SimulatedCluster) -> dict[str, Any]:
    node = simulator.get("Node", NODE) or {}
    return dict(node.get("status", {}).get("allocatable") or {})


def events(api: client.ApiClient) -> list[Any]:
    items = client.CoreV1Api(api).list_namespaced_event(NS).items
    return [e for e in items if e.reason.startswith("GpuSlots")]


def test_writer_read_returns_daemonset_and_absent_configmap(writer: PluginWriter) -> None:
    objects = writer.read()
    assert objects.daemonset is not None
    assert objects.daemonset["metadata"]["name"] == DS
    assert objects.configmap is None


def test_writer_dry_run_accepts_and_writes_nothing(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, ts(4), configmap_name=CM)

    result = writer.dry_run(plan)

    assert result.ok
    after = writer.read()
    assert after.configmap is None
    assert after.daemonset == objects.daemonset


def test_writer_dry_run_reports_the_servers_objection(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, ts(4), configmap_name=CM)
    simulator.fail_next(verb="update", kind="DaemonSet", code=422)

    result = writer.dry_run(plan)

    assert not result.ok
    assert result.configmap is None
    assert result.daemonset is not None and "DaemonSet" in result.daemonset


def test_writer_apply_switches_node_to_time_slicing_and_records_event(
    writer: PluginWriter, simulator: SimulatedCluster, api: client.ApiClient
) -> None:
    assert allocatable(simulator)["nvidia.com/gpu"] == "2"
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, ts(4), configmap_name=CM)

    result = apply_as(writer, plan, "alice")

    assert result.configmap is not None and result.warnings == ()
    wait_for(lambda: allocatable(simulator).get("nvidia.com/gpu") == "8", what="8 slots")
    recorded = events(api)
    assert [e.reason for e in recorded] == ["GpuSlotsConfigChanged"]
    assert "alice" in recorded[0].message
    assert "basic" in recorded[0].message and "time-slicing x4" in recorded[0].message


def test_writer_rollback_restores_basic_and_deletes_configmap(
    writer: PluginWriter, simulator: SimulatedCluster, api: client.ApiClient
) -> None:
    objects = writer.read()
    apply_as(writer, plan_change(objects.daemonset, None, ts(4), configmap_name=CM), "alice")
    wait_for(lambda: allocatable(simulator).get("nvidia.com/gpu") == "8", what="8 slots")

    plan = back_to_basic(writer)
    assert plan.configmap_action is ConfigMapAction.DELETE
    apply_as(writer, plan, "bob")

    wait_for(lambda: allocatable(simulator).get("nvidia.com/gpu") == "2", what="2 slots")
    assert writer.read().configmap is None
    reasons = sorted(e.reason for e in events(api))
    assert reasons == ["GpuSlotsConfigChanged", "GpuSlotsConfigRolledBack"]


def test_writer_dry_run_of_a_configmap_deletion_deletes_nothing(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    """kube-apiserver reads a DELETE's dryRun from the body when one is sent (the tier found
    a rollback preview that deleted the ConfigMap); the simulator now does the same."""
    objects = writer.read()
    apply_as(writer, plan_change(objects.daemonset, None, ts(4), configmap_name=CM), "alice")
    plan = back_to_basic(writer)
    assert plan.configmap_action is ConfigMapAction.DELETE

    verdict = writer.dry_run(plan)

    assert verdict.ok
    assert simulator.get("ConfigMap", CM, NS) is not None


def test_writer_daemonset_changed_in_between_writes_nothing(
    writer: PluginWriter, simulator: SimulatedCluster, api: client.ApiClient
) -> None:
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, ts(4), configmap_name=CM)
    client.AppsV1Api(api).patch_namespaced_daemon_set(
        DS, NS, {"metadata": {"labels": {"edited": "by-someone"}}}
    )

    with pytest.raises(ConcurrentChange) as lost:
        apply_as(writer, plan, "alice")

    assert lost.value.winner is None  # the label's write is no change of GPU Slots
    assert str(lost.value).startswith(
        f"DaemonSet {NS}/{DS} was changed at the same time by a write outside GPU Slots: this "
        "change was not applied and nothing of it was written (1 write(s) made before it were "
        "undone)."
    )
    undone = lost.value.cause
    assert isinstance(undone, ApplyFailed) and undone.restored
    assert isinstance(undone.cause, ConflictError)
    after = writer.read()
    assert after.configmap is None
    assert "CONFIG_FILE" not in str(after.daemonset)
    assert events(api) == []


def test_writer_failed_daemonset_write_removes_the_created_configmap(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, ts(4), configmap_name=CM)
    simulator.fail_next(verb="update", kind="DaemonSet", code=500)

    with pytest.raises(ApplyFailed) as failed:
        apply_as(writer, plan, "alice")

    assert failed.value.restored
    assert "the cluster is as before" in str(failed.value)
    after = writer.read()
    assert after.configmap is None
    assert after.daemonset == objects.daemonset
    assert allocatable(simulator)["nvidia.com/gpu"] == "2"


def test_writer_failed_daemonset_write_restores_the_updated_configmap(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    apply_as(writer, plan_change(objects.daemonset, None, ts(4), configmap_name=CM), "alice")
    objects = writer.read()
    assert objects.configmap is not None
    old_data = objects.configmap["data"]
    plan = plan_change(objects.daemonset, objects.configmap, ts(8), configmap_name=CM)
    simulator.fail_next(verb="update", kind="DaemonSet", code=500)

    with pytest.raises(ApplyFailed) as failed:
        apply_as(writer, plan, "alice")

    assert failed.value.restored
    after = writer.read()
    assert after.configmap is not None and after.configmap["data"] == old_data


def test_writer_failed_restore_says_the_cluster_is_half_changed(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, ts(4), configmap_name=CM)
    simulator.fail_next(verb="update", kind="DaemonSet", code=500)
    simulator.fail_next(verb="delete", kind="ConfigMap", code=500)

    with pytest.raises(ApplyFailed) as failed:
        apply_as(writer, plan, "alice")

    assert not failed.value.restored
    assert "holds the NEW config" in str(failed.value)


def test_writer_switch_to_basic_deletes_configmap_after_the_daemonset(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    apply_as(writer, plan_change(objects.daemonset, None, ts(4), configmap_name=CM), "alice")
    objects = writer.read()
    request = ChangeRequest(mode="basic", delete_configmap=True)
    plan = plan_change(objects.daemonset, objects.configmap, request, configmap_name=CM)
    simulator.reset_request_counts()

    result = apply_as(writer, plan, "alice")

    assert result.configmap is None
    assert writer.read().configmap is None
    wait_for(lambda: allocatable(simulator).get("nvidia.com/gpu") == "2", what="2 slots")


def test_writer_configmap_delete_failure_leaves_a_warning_not_an_error(
    writer: PluginWriter, simulator: SimulatedCluster
) -> None:
    objects = writer.read()
    apply_as(writer, plan_change(objects.daemonset, None, ts(4), configmap_name=CM), "alice")
    objects = writer.read()
    request = ChangeRequest(mode="basic", delete_configmap=True)
    plan = plan_change(objects.daemonset, objects.configmap, request, configmap_name=CM)
    simulator.fail_next(verb="delete", kind="ConfigMap", code=500)

    result = apply_as(writer, plan, "alice")

    assert [warning.code for warning in result.warnings] == ["configmap-left-behind"]
    assert "deleting ConfigMap" in result.warnings[0].params["error"]
    assert writer.read().configmap is not None


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append(dict(self.headers))
        body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


def test_writer_acting_as_impersonates_the_user_and_group() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api_client = make_api_client(host=f"http://127.0.0.1:{server.server_address[1]}")
    writer = PluginWriter(api_client, plugin=PluginTarget(namespace=NS, name=DS), configmap_name=CM)
    try:
        with writer.acting_as("ada", ("gpu-admins",)) as acting:
            assert acting.read().daemonset is None
        writer.read()
    finally:
        server.shutdown()
        server.server_close()
        api_client.close()
    impersonated, own = _Recorder.seen[:2], _Recorder.seen[2:]
    assert all(h.get("Impersonate-User") == "ada" for h in impersonated)
    assert all(h.get("Impersonate-Group") == "gpu-admins" for h in impersonated)
    assert own and all("Impersonate-User" not in h for h in own)
