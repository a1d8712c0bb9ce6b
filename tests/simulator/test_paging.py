"""Paged lists (`limit` + `continue`) through the real kubernetes client and real kubectl."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from app.simulator.apiserver import paging
from app.simulator.apiserver.errors import ApiError
from app.simulator.apiserver.store import Entry, dumps
from app.simulator.world.cluster import SimulatedCluster

NAMES = ["cm-a", "cm-b", "cm-c", "cm-d", "cm-e", "cm-f", "cm-g"]


def _namespace(core: client.CoreV1Api, name: str) -> None:
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # Created in reverse: a list answers in key order, not in creation order.
    for cm in reversed(NAMES):
        core.create_namespaced_config_map(
            name, {"metadata": {"name": cm, "labels": {"set": "seven"}}, "data": {"k": cm}}
        )


def _names(body: Any) -> list[str]:
    return [item.metadata.name for item in body.items]


def test_pages_of_three_give_the_whole_list_in_order_at_one_version(
    core: client.CoreV1Api,
) -> None:
    _namespace(core, "paged")
    first = core.list_namespaced_config_map("paged", limit=3)
    assert _names(first) == ["cm-a", "cm-b", "cm-c"]
    assert first.metadata.remaining_item_count == 4
    listed_at = first.metadata.resource_version

    # A change between pages is not in them: the pages are the list as it was.
    core.delete_namespaced_config_map("cm-e", "paged")
    core.create_namespaced_config_map("paged", {"metadata": {"name": "cm-b2"}})

    second = core.list_namespaced_config_map("paged", limit=3, _continue=first.metadata._continue)
    third = core.list_namespaced_config_map("paged", limit=3, _continue=second.metadata._continue)
    assert _names(second) == ["cm-d", "cm-e", "cm-f"]
    assert second.metadata.remaining_item_count == 1
    assert _names(third) == ["cm-g"]
    assert third.metadata._continue is None and third.metadata.remaining_item_count is None
    assert {first.metadata.resource_version, second.metadata.resource_version} == {listed_at}
    assert third.metadata.resource_version == listed_at

    # A watch from the list's version then brings exactly those changes.
    stream = watch.Watch()
    seen = []
    for event in stream.stream(
        core.list_namespaced_config_map,
        "paged",
        resource_version=listed_at,
        timeout_seconds=2,
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            stream.stop()
    assert seen == [("DELETED", "cm-e"), ("ADDED", "cm-b2")]


def test_a_selected_list_pages_without_a_remaining_count(core: client.CoreV1Api) -> None:
    _namespace(core, "selected")
    first = core.list_namespaced_config_map("selected", limit=4, label_selector="set=seven")
    rest = core.list_namespaced_config_map(
        "selected", limit=4, label_selector="set=seven", _continue=first.metadata._continue
    )
    assert _names(first) + _names(rest) == NAMES
    assert first.metadata.remaining_item_count is None
    whole = core.list_namespaced_config_map("selected", label_selector="set=seven")
    assert _names(whole) == NAMES and whole.metadata._continue is None


def test_a_continue_token_after_compaction_is_410_expired(
    sim: SimulatedCluster, core: client.CoreV1Api
) -> None:
    _namespace(core, "compacted")
    first = core.list_namespaced_config_map("compacted", limit=2)
    sim.expire_watches()  # the store forgets every past version, as etcd compaction does
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("compacted", limit=2, _continue=first.metadata._continue)
    assert caught.value.status == 410
    assert "start a new list without the continue parameter" in caught.value.body
    again = core.list_namespaced_config_map("compacted", limit=10)
    assert _names(again) == NAMES


def test_bad_limits_and_tokens_are_400_with_the_reason(sim: SimulatedCluster) -> None:
    url = f"{sim.url}/api/v1/namespaces/kube-system/configmaps"
    bad_limit = httpx.get(url, params={"limit": "many"})
    bad_token = httpx.get(url, params={"limit": "2", "continue": "not-a-token"})
    with_version = httpx.get(url, params={"continue": "abc", "resourceVersion": "5"})
    assert bad_limit.status_code == 400
    assert bad_limit.json()["message"] == "invalid limit: 'many' is not an integer"
    assert bad_token.status_code == 400
    assert bad_token.json()["message"].startswith("continue key is not valid:")
    assert with_version.status_code == 400
    assert with_version.json()["message"] == (
        "specifying resource version is not allowed when using continue"
    )


def test_kubectl_chunk_size_pages_tables_and_json(
    sim: SimulatedCluster,
    core: client.CoreV1Api,
    kubectl: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    _namespace(core, "chunked")
    sim.faults.reset_counts()
    table = kubectl(sim.url, "get", "configmaps", "-n", "chunked", "--chunk-size=2").stdout
    rows = [line.split()[0] for line in table.splitlines()[1:]]
    assert rows == NAMES
    lists = sim.faults.counts()[("list", "ConfigMap")]
    assert lists == 4  # 2 + 2 + 2 + 1: kubectl followed every continue token
    names = kubectl(
        sim.url,
        "get",
        "configmaps",
        "-n",
        "chunked",
        "--chunk-size=3",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ).stdout
    assert names.split() == NAMES


def test_the_pager_forgets_old_lists_and_expires_their_tokens() -> None:
    now = [0.0]
    pager = paging.Pager(keep_s=10, clock=lambda: now[0])
    entries = _entries(5)
    first = pager.page("ConfigMap|ns||", 2, None, current=lambda: (entries, 7), current_rv=7)
    assert first.token is not None and first.remaining == 3
    now[0] = 5.0
    second = pager.page("ConfigMap|ns||", 2, first.token, current=lambda: ([], 9), current_rv=9)
    assert [e.obj["metadata"]["name"] for e in second.entries] == ["n2", "n3"]
    now[0] = 11.0  # the held list is gone; the collection changed since (version 9)
    with pytest.raises(ApiError) as caught:
        pager.page("ConfigMap|ns||", 2, second.token, current=lambda: ([], 9), current_rv=9)
    assert caught.value.code == 410
    # Nothing changed since the list (still version 7): the current objects are that list.
    last = pager.page("ConfigMap|ns||", 2, second.token, current=lambda: (entries, 7), current_rv=7)
    assert [e.obj["metadata"]["name"] for e in last.entries] == ["n4"]
    assert last.token is None


def _entries(count: int) -> list[Entry]:
    objects = [{"metadata": {"namespace": "ns", "name": f"n{i}"}} for i in range(count)]
    return [Entry(obj, dumps(obj)) for obj in objects]
