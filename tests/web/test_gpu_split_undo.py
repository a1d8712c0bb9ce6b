"""A split whose later write fails: the writes made are undone and the admin told the state."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from app.kube.client import make_api_client
from tests.conftest import Stack
from tests.live import wait_for
from tests.web.test_gpu_split_api import (
    GIVE_GPU_1,
    NODE,
    NS,
    OWN,
    SHARED,
    allocatable,
    changes,
    daemonsets,
    put,
    reported,
)

CONFIRMED = {**GIVE_GPU_1, "confirmHostProcesses": True}


def shared_affinity(stack: Stack) -> object:
    api_client = make_api_client(host=stack.simulator.url)
    try:
        ds = client.AppsV1Api(api_client).read_namespaced_daemon_set(SHARED, NS)
    finally:
        api_client.close()
    return ds.spec.template.spec.affinity  # type: ignore[union-attr]


def node_labels(stack: Stack) -> dict[str, str]:
    api_client = make_api_client(host=stack.simulator.url)
    try:
        node = client.CoreV1Api(api_client).read_node(NODE)
    finally:
        api_client.close()
    return {k: v for k, v in (node.metadata.labels or {}).items() if k.startswith("gpu-slots")}  # type: ignore[union-attr]


@pytest.fixture
def admin(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("host-split")
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    return stack


def test_a_failed_node_label_undoes_both_daemonset_writes(admin: Stack) -> None:
    affinity = shared_affinity(admin)
    admin.simulator.fail_next(verb="patch", kind="Node", code=503)
    failed = put(admin, NODE, CONFIRMED)
    assert failed.status_code == 502, failed.text
    detail = failed.json()["detail"]
    assert "the cluster is as before the change" in detail
    assert f"daemonset/{SHARED}: undone" in detail
    assert f"daemonset/{OWN}: undone" in detail
    assert daemonsets(admin) == [SHARED]
    assert shared_affinity(admin) == affinity
    assert node_labels(admin) == {}
    assert allocatable(admin) == {NODE: "2"}
    assert changes(admin) == []


def test_a_lost_answer_on_the_label_is_re_read_and_the_split_goes_on(admin: Stack) -> None:
    admin.simulator.fail_next(verb="patch", kind="Node", code=504, after_commit=True)
    applied = put(admin, NODE, CONFIRMED)
    assert applied.status_code == 200, applied.text
    assert applied.json()["warnings"][0].startswith(f"The answer to label node/{NODE} was lost")
    wait_for(lambda: allocatable(admin) == {NODE: "3"}, what="allocatable 3 on gpu-server-1")
    assert node_labels(admin) == {"gpu-slots.io/plugin-daemonset": OWN}


def test_an_undo_that_fails_names_what_the_cluster_now_holds(admin: Stack) -> None:
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=503)
    admin.simulator.fail_next(verb="delete", kind="DaemonSet", code=403)
    failed = put(admin, NODE, CONFIRMED)
    assert failed.status_code == 502, failed.text
    detail = failed.json()["detail"]
    assert "The cluster is NOT as before the change" in detail
    assert f"daemonset/{SHARED} not written" in detail
    assert f"daemonset/{OWN} as written, the undo failed" in detail
    assert f"kubectl -n {NS}" in detail
    assert daemonsets(admin) == [SHARED, OWN]
    assert allocatable(admin) == {NODE: "2"}  # the node label was never written
