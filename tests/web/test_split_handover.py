"""A split hands its node from one plugin DaemonSet to another with no two plugin pods at once.

The real kubelet keeps one plugin client per resource name: a plugin pod that stops after
its successor registered takes the successor's registration with it, and the node
advertises 0 GPUs (issue 43, app.kube.handover). So the node label is vacated first and
set only once the old DaemonSet's pod has left the node. The simulator's API server keeps
every change, so the test replays the node's labels and the plugin pods' comings and goings
in the order the API server made them.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from app.domain.changes.history import change_id
from app.domain.changes.records import Authored, split_record
from app.domain.changes.split_models import SplitRequest
from app.kube.calls import NamespaceCalls
from app.kube.client import make_api_client
from app.kube.handover import HandOver, Lingered
from app.kube.split_writer import SplitWriter
from app.web.services.changes.gpu_split import preview_split
from app.web.services.changes.pipeline import writer_for
from tests.conftest import Stack, runtime_of
from tests.web.test_gpu_split_api import BEARER, BLIND, GPU, NODE, NS, OWN, SHARED, admin, put
from tests.web.test_gpu_split_undo import node_labels
from tests.web.test_writes_truth import ADMIN, CONFIRMED, NOW

__all__ = ["admin"]  # the fixture

LABEL = "gpu-slots.io/plugin-daemonset"


def _version(stack: Stack) -> int:
    nodes = httpx.get(f"{stack.simulator.url}/api/v1/nodes", timeout=10).json()
    return int(nodes["metadata"]["resourceVersion"])


def _replay(stack: Stack, path: str, since: int) -> list[dict[str, Any]]:
    """Every event of `path` after resourceVersion `since`, as the API server made them."""
    answer = httpx.get(
        f"{stack.simulator.url}{path}",
        params={"watch": "true", "resourceVersion": str(since), "timeoutSeconds": "1"},
        timeout=10,
    )
    return [json.loads(line) for line in answer.text.splitlines() if line.strip()]


def _history(stack: Stack, since: int) -> list[str]:
    """The node's plugin label values and the plugin pods added to and deleted from it, in
    the order the API server made them (a node write that left the label alone not shown)."""
    steps: list[tuple[int, str]] = []
    label: object = "unread"
    for event in _replay(stack, "/api/v1/nodes", since):
        meta = event["object"]["metadata"]
        value = (meta.get("labels") or {}).get(LABEL)
        if meta["name"] == NODE and value != label:
            label = value
            steps.append((int(meta["resourceVersion"]), f"label {value}"))
    for event in _replay(stack, f"/api/v1/namespaces/{NS}/pods", since):
        pod = event["object"]
        owners = [r["name"] for r in pod["metadata"].get("ownerReferences") or []]
        if pod["spec"].get("nodeName") == NODE and owners and event["type"] != "MODIFIED":
            steps.append((int(pod["metadata"]["resourceVersion"]), f"{event['type']} {owners[0]}"))
    return [what for _, what in sorted(steps)]


def test_a_split_and_its_return_hand_the_node_over_only_once_the_old_plugin_pod_is_gone(
    admin: Stack,
) -> None:
    since = _version(admin)
    applied = put(admin, NODE, CONFIRMED)
    assert applied.status_code == 200, applied.text
    split = _history(admin, since)

    since = _version(admin)
    returned = admin.client.delete(f"/api/v1/nodes/{NODE}/gpu-split", params=BLIND, headers=BEARER)
    assert returned.status_code == 200, returned.text
    back = _history(admin, since)

    # vacated: the shared pod leaves; then named: the node's own pod comes
    assert split[split.index("label ") :] == [
        "label ",
        f"DELETED {SHARED}",
        f"label {OWN}",
        f"ADDED {OWN}",
    ]
    assert back[back.index("label ") :] == [
        "label ",
        f"DELETED {OWN}",
        "label None",
        f"ADDED {SHARED}",
    ]
    assert applied.json()["warnings"] == returned.json()["warnings"] == []


def _pod(name: str, owner: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "uid": "u-1"}
            ],
        },
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "plugin"}]},
    }


@pytest.mark.parametrize("leaves", [True, False])
def test_the_hand_over_waits_for_the_old_pod_within_its_bound(admin: Stack, leaves: bool) -> None:
    admin.simulator.create_pod(_pod("old-plugin", "old-daemonset"))
    admin.simulator.create_pod(_pod("other", "kube-proxy"))  # not one of the DaemonSets
    api = make_api_client(host=admin.simulator.url)
    handover = HandOver(NamespaceCalls(api, NS), wait_s=3.0 if leaves else 0.5)
    timer = threading.Timer(0.5, admin.simulator.delete_pod, (NS, "old-plugin"))
    if leaves:
        timer.start()
    try:
        found = handover.wait_gone(NODE, frozenset({"old-daemonset", "gone-daemonset"}))
    finally:
        timer.cancel()
        api.close()

    assert found == (None if leaves else Lingered(NODE, "old-plugin"))


def test_a_wait_that_cannot_read_the_pods_ends_at_its_bound_and_says_so(admin: Stack) -> None:
    runtime = runtime_of(admin.app)
    request = SplitRequest(NODE, (GPU[1], GPU[2], GPU[3]), confirm_host_processes=True)
    plan = preview_split(runtime.changes, ADMIN, request).plan
    admin.simulator.fail_next(verb="list", kind="Pod", code=500, count=1000)
    try:
        with writer_for(runtime.changes, ADMIN) as plugin_writer:
            record = split_record(plan, Authored(change_id(NOW, "c0ffee"), "bob", NOW))
            applied = SplitWriter(plugin_writer, handover_wait_s=0.5).apply(plan, record=record)
    finally:
        admin.simulator.clear_faults()

    assert [(w.code, w.params["node"], w.params["seconds"]) for w in applied.warnings] == [
        ("handover-unconfirmed", NODE, "0.5")
    ]
    assert "injected fault for list Pod" in str(applied.warnings[0].params["pods"])  # why
    assert node_labels(admin) == {LABEL: OWN}  # the new DaemonSet let in all the same
