"""The durable change history against the simulated cluster, through the real client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from app.domain.changes.durable import RECORD_LABEL, StoredRecord, UnreadableRecord
from app.domain.changes.history import ChangeRecord, change_id, mode_side
from app.errors import ClusterError
from app.kube.client import make_api_client
from app.kube.history import ChangeHistory
from app.simulator.world.cluster import SimulatedCluster

NS = "gpu-slots"
AT = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def simulator() -> Iterator[SimulatedCluster]:
    cluster = SimulatedCluster("empty")
    cluster.start(host="127.0.0.1", port=0)
    yield cluster
    cluster.stop()


@pytest.fixture
def api(simulator: SimulatedCluster) -> Iterator[client.ApiClient]:
    api_client = make_api_client(host=simulator.url)
    core = client.CoreV1Api(api_client)
    for namespace in (NS, "elsewhere"):
        core.create_namespace({"metadata": {"name": namespace}})  # type: ignore[arg-type]
    yield api_client
    api_client.close()


def record(minutes: int) -> ChangeRecord:
    at = AT + timedelta(minutes=minutes)
    return ChangeRecord(
        id=change_id(at, f"{minutes:06x}"),
        kind="mode",
        action="change",
        at=at,
        user="alice",
        summary=f"change {minutes}",
        before=mode_side("before", {"mode": "basic", "replicas": 1}),
        after=mode_side("after", {"mode": "time-slicing", "replicas": 4}),
    )


def configmaps(api: client.ApiClient, namespace: str = NS) -> list[Any]:
    return list(client.CoreV1Api(api).list_namespaced_config_map(namespace).items)


def put_configmap(api: client.ApiClient, name: str, *, labels: dict[str, str], data: Any) -> None:
    body: Any = {"metadata": {"name": name, "labels": labels}, "data": data}
    client.CoreV1Api(api).create_namespaced_config_map(NS, body)


def test_history_record_then_listing_returns_the_record(api: client.ApiClient) -> None:
    history = ChangeHistory(api, namespace=NS)

    history.record(record(1))
    listing = history.listing()

    assert listing.records == (record(1),)
    assert listing.unreadable == ()
    (stored,) = configmaps(api)
    assert stored.metadata.labels[RECORD_LABEL] == "mode"
    assert stored.metadata.name == "gpu-slots-change-" + record(1).id


def test_history_beyond_keep_deletes_the_oldest(api: client.ApiClient) -> None:
    history = ChangeHistory(api, namespace=NS, keep=2)

    for minutes in (1, 2, 3, 4):
        history.record(record(minutes))

    assert [r.summary for r in history.listing().records] == ["change 4", "change 3"]
    assert len(configmaps(api)) == 2


def test_history_prune_leaves_other_configmaps_and_unreadable_records(
    api: client.ApiClient,
) -> None:
    put_configmap(api, "settings", labels={"app": "gpu-slots"}, data={"a": "b"})
    put_configmap(api, "gpu-slots-change-junk", labels={RECORD_LABEL: "mode"}, data={"x": "y"})
    history = ChangeHistory(api, namespace=NS, keep=1)

    history.record(record(1))
    history.record(record(2))

    names = sorted(c.metadata.name for c in configmaps(api))
    assert names == ["gpu-slots-change-" + record(2).id, "gpu-slots-change-junk", "settings"]


def test_history_listing_with_garbage_records_lists_them_unreadable(
    api: client.ApiClient,
) -> None:
    put_configmap(
        api, "gpu-slots-change-junk", labels={RECORD_LABEL: "mode"}, data={"record.json": "{"}
    )
    put_configmap(api, "gpu-slots-change-empty", labels={RECORD_LABEL: "x"}, data=None)
    history = ChangeHistory(api, namespace=NS)
    history.record(record(1))

    listing = history.listing()

    assert [r.id for r in listing.records] == [record(1).id]
    assert [u.name for u in listing.unreadable] == [
        "gpu-slots-change-empty",
        "gpu-slots-change-junk",
    ]


def test_history_find_returns_stored_unreadable_or_none(api: client.ApiClient) -> None:
    history = ChangeHistory(api, namespace=NS)
    history.record(record(1))
    put_configmap(api, "gpu-slots-change-junk", labels={RECORD_LABEL: "mode"}, data={})
    # The name of a record, without the label: not one of ours.
    put_configmap(api, "gpu-slots-change-unlabelled", labels={}, data={})

    found = history.find(record(1).id)

    assert isinstance(found, StoredRecord) and found.record == record(1)
    assert isinstance(history.find("junk"), UnreadableRecord)
    assert history.find("unlabelled") is None
    assert history.find("20990101-000000-000-ffffff") is None
    assert history.find("../../secrets/x") is None


def test_history_other_namespace_is_not_read(api: client.ApiClient) -> None:
    ChangeHistory(api, namespace="elsewhere").record(record(1))

    assert ChangeHistory(api, namespace=NS).listing().records == ()


def test_history_api_server_down_raises_our_error(
    api: client.ApiClient, simulator: SimulatedCluster
) -> None:
    simulator.set_unavailable(True)
    history = ChangeHistory(api, namespace=NS)

    with pytest.raises(ClusterError):
        history.listing()
    with pytest.raises(ClusterError):
        history.record(record(1))


def test_history_failed_prune_keeps_the_record(
    api: client.ApiClient, simulator: SimulatedCluster
) -> None:
    history = ChangeHistory(api, namespace=NS, keep=1)
    history.record(record(1))
    simulator.fail_next(verb="delete", kind="ConfigMap", code=500, count=1)

    history.record(record(2))

    assert [r.summary for r in history.listing().records] == ["change 2", "change 1"]
    assert history.prune() == ["gpu-slots-change-" + record(1).id]


def test_history_update_rollout_rewrites_a_signed_record_signed_again(
    api: client.ApiClient,
) -> None:
    """The watcher that puts maxUnavailable back says so in the record, which stays verified;
    a record another key signed (or no one) is left as it is."""
    history = ChangeHistory(api, namespace=NS, signing_key=b"k" * 32)
    raised = {"changeId": record(1).id, "maxUnavailable": {"from": 1, "to": 2, "restoredAt": None}}
    history.record(replace(record(1), rollout=raised))
    put_back = {
        **raised,
        "maxUnavailable": {"from": 1, "to": 2, "restoredAt": "2026-03-01T09:05:00Z"},
    }

    assert history.update_rollout(record(1).id, put_back) is True
    found = history.find(record(1).id)
    assert isinstance(found, StoredRecord) and found.verified
    assert found.record.rollout == put_back
    assert found.record.summary == record(1).summary

    stranger = ChangeHistory(api, namespace=NS, signing_key=b"x" * 32)
    assert stranger.update_rollout(record(1).id, raised) is False
    assert stranger.update_rollout(record(2).id, raised) is False  # no such record
    again = history.find(record(1).id)
    assert isinstance(again, StoredRecord) and again.verified
    assert again.record.rollout == put_back
