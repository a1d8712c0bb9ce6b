"""Two mode changes of one preview at the same instant, on the real API server (issue 48).

Two writers apply the plan of one read at once, as two admins applying the same preview
would once both passed the freshness check: the real kube-apiserver takes one ConfigMap
write first and answers the other with its own 409 ("already exists" for a create, "the
object has been modified" for a replace). The loser must hear the one answer both writers
give (app.kube.concurrent): not applied, nothing of it written, which change won.

The plugin here is a DaemonSet of its own namespace that matches no node, so the race rolls
no pod and the tier's demo is untouched; the namespace is deleted afterwards.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from app.domain.changes.history import change_id
from app.domain.changes.models import ChangeRequest
from app.domain.changes.plan import plan_change
from app.domain.changes.records import Authored, mode_record
from app.domain.plugin_target import PluginTarget
from app.kube.concurrent import CHANGE_ID_ANNOTATION, ConcurrentChange
from app.kube.writer import ApplyResult, PluginWriter
from tests import factories as f
from tests.real.controlplane import ControlPlane

DS = "race-device-plugin"
CM = "race-device-plugin-config"


@dataclass(frozen=True)
class Race:
    api: client.ApiClient
    namespace: str  # of its own: a namespace's deletion takes a while on the real server


@pytest.fixture
def race(plane: ControlPlane) -> Iterator[Race]:
    """The real API server as its admin, with a plugin DaemonSet that runs nowhere."""
    ns = f"gpu-slots-race-{secrets.token_hex(3)}"
    configuration = client.Configuration()
    configuration.host = plane.server
    configuration.ssl_ca_cert = str(plane.ca_file)
    configuration.api_key = {"authorization": f"Bearer {plane.admin.token}"}
    api_client = client.ApiClient(configuration)
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    core.create_namespace({"metadata": {"name": ns}})
    daemonset = f.plugin_daemonset(name=DS, namespace=ns, runtime_class=None)
    daemonset["metadata"].pop("uid")
    daemonset.pop("status")
    daemonset["spec"]["template"]["spec"]["nodeSelector"] = {"gpu-slots.io/race": "nowhere"}
    apps.create_namespaced_daemon_set(ns, daemonset)
    try:
        yield Race(api_client, ns)
    finally:
        core.delete_namespace(ns)
        api_client.close()


def _writer(race: Race) -> PluginWriter:
    plugin = PluginTarget(namespace=race.namespace, name=DS)
    return PluginWriter(race.api, plugin=plugin, configmap_name=CM)


def _apply(writer: PluginWriter, request: ChangeRequest, *, change: str) -> ApplyResult:
    objects = writer.read()
    plan = plan_change(objects.daemonset, objects.configmap, request, configmap_name=CM)
    return writer.apply(plan, record=mode_record(plan, Authored(change, "alice", f.NOW)))


def _annotation(obj: Any) -> str | None:
    return (obj.metadata.annotations or {}).get(CHANGE_ID_ANNOTATION)


@pytest.mark.parametrize(
    ("first", "server_said"),
    [(None, "already exists"), (ChangeRequest("time-slicing", 2), "the object has been modified")],
)
def test_the_loser_of_two_applies_at_once_is_told_which_change_won(
    race: Race, first: ChangeRequest | None, server_said: str
) -> None:
    if first is not None:
        _apply(_writer(race), first, change=change_id(f.NOW, "000001"))
    writer = _writer(race)
    objects = writer.read()  # one preview: both admins apply the plan of this read
    plan = plan_change(
        objects.daemonset, objects.configmap, ChangeRequest("time-slicing", 4), configmap_name=CM
    )
    ids = [change_id(f.NOW, "a1a1a1"), change_id(f.NOW, "b2b2b2")]
    start = threading.Barrier(2)
    answers: dict[str, ApplyResult | Exception] = {}

    def one(change: str) -> None:
        record = mode_record(plan, Authored(change, f"admin-{change[-6:]}", f.NOW))
        start.wait()
        try:
            answers[change] = _writer(race).apply(plan, record=record)
        except Exception as exc:  # the loser's answer, judged below
            answers[change] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    won = [i for i in ids if isinstance(answers[i], ApplyResult)]
    lost = [answers[i] for i in ids if isinstance(answers[i], ConcurrentChange)]
    assert len(won) == len(lost) == 1, answers
    winner, loss = won[0], lost[0]
    assert isinstance(loss, ConcurrentChange) and loss.winner == winner
    assert str(loss).startswith(
        f"ConfigMap {race.namespace}/{CM} was changed at the same time by change {winner}: "
        "this change was not applied and nothing of it was written."
    ), str(loss)
    assert server_said in str(loss)  # the real API server's own words, as the detail
    core, apps = client.CoreV1Api(race.api), client.AppsV1Api(race.api)
    configmap = core.read_namespaced_config_map(CM, race.namespace)
    daemonset = apps.read_namespaced_daemon_set(DS, race.namespace)
    assert _annotation(configmap) == _annotation(daemonset) == winner
    assert "replicas: 4" in configmap.data["config.yaml"]
    events = [e.metadata.name for e in core.list_namespaced_event(race.namespace).items]
    loser = next(i for i in ids if i != winner)
    assert [e for e in events if loser in e] == []  # announced: the winner only
    assert [e for e in events if winner in e] != []
