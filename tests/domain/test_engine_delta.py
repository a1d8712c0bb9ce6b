"""Builds for a few changes look only at the nodes a change touches, and equal plain builds.

Between builds that keep the agents' ages (the snapshot loop's builds for a change), the
engine asks only the nodes whose manifest, holding pods, report or process pods changed
(app/domain/engine/nodes.py). Whatever changes, such a build must give the very snapshot a
build without any memo gives, and its sums (kept by difference) must be right.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo
from app.domain.report import AgentReport, ReceivedReport
from app.domain.snapshot import Snapshot
from tests.bench.engine_bench import _bump, cluster_state

OPTIONS = AccountingOptions()


def _fresh(state: ClusterState, at: datetime) -> ClusterState:
    """Every agent report received at `at` (fresh then)."""
    reports = {
        name: ReceivedReport(report=received.report, received_at=at)
        for name, received in state.reports.items()
    }
    return replace(state, reports=reports)


def _with_report(
    state: ClusterState, name: str, body: dict[str, Any], at: datetime
) -> ClusterState:
    reports = dict(state.reports)
    reports[name] = ReceivedReport(report=AgentReport.model_validate(body), received_at=at)
    return replace(state, reports=reports)


def _body(state: ClusterState, name: str) -> dict[str, Any]:
    body: dict[str, Any] = state.reports[name].report.model_dump(mode="json", by_alias=True)
    return body


def _compare(state: ClusterState, memo: EngineMemo, now: datetime, ages_at: datetime) -> Snapshot:
    with_memo = build_snapshot(state, options=OPTIONS, now=now, memo=memo, ages_at=ages_at)
    plain = build_snapshot(state, options=OPTIONS, now=now, ages_at=ages_at)
    assert with_memo == plain
    return with_memo


def test_builds_for_random_changes_between_two_reckonings_equal_plain_builds() -> None:
    # Pods finish, move, are deleted and created; agents report new readings, renew, stop
    # (their report dropped) and report again; node manifests are replaced in place; a
    # report names a pod of another node. Every build keeps the ages of the first.
    t0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    state = _fresh(cluster_state(30), t0)
    memo = EngineMemo()
    rng = random.Random(5)
    names = sorted(state.reports)
    version = 30_000_000
    _compare(state, memo, t0, t0)
    for step in range(60):
        now = t0 + timedelta(milliseconds=100 * (step + 1))
        version += 1
        kind = rng.choice(["pod", "pod", "report", "renewal", "dropped", "node", "elsewhere"])
        if kind == "pod":
            pods = list(state.pods)
            movable = [i for i, p in enumerate(pods) if p["metadata"]["namespace"] != "kube-system"]
            index = rng.choice(movable)
            pod = _bump(pods[index], version)
            change = rng.choice(["finish", "move", "delete", "create"])
            if change == "delete":
                del pods[index]
            elif change == "create":
                pod["metadata"].update(name=f"new-{version}", uid=f"uid-new-{version}")
                pods.append(pod)
            else:
                if change == "finish":
                    pod["status"]["phase"] = "Succeeded"
                else:
                    pod["spec"]["nodeName"] = rng.choice(names)
                pods[index] = pod
            state = replace(state, pods=pods)
        elif kind in ("report", "elsewhere"):
            name = rng.choice(names)
            if name not in state.reports:
                continue
            body = _body(state, name)
            if kind == "report":
                body["gpus"][0]["processes"].append(
                    {"pid": 70 + step, "used_memory_mib": 2048, "user": "eve"}
                )
            else:  # a process naming a pod of another node
                other = next(p for p in state.pods if p["spec"].get("nodeName") not in (name, None))
                body["gpus"][1]["processes"] = [
                    {"pid": 9, "used_memory_mib": 512, "pod_uid": other["metadata"]["uid"]}
                ]
            state = _with_report(state, name, body, now)
        elif kind == "renewal":
            name = rng.choice([n for n in names if n in state.reports])
            state = _with_report(state, name, _body(state, name), now)
        elif kind == "dropped":
            reports = dict(state.reports)
            reports.pop(rng.choice(names), None)
            state = replace(state, reports=reports)
        else:
            nodes = list(state.nodes)
            index = rng.randrange(len(nodes))
            nodes[index] = _bump(nodes[index], version)
            nodes[index]["status"]["allocatable"]["nvidia.com/gpu"] = str(rng.randint(0, 8))
            state = replace(state, nodes=nodes)
        _compare(state, memo, now, t0)
    assert memo.delta_builds >= 50  # builds that changed every node's inputs ask every node


def test_a_pod_named_by_another_nodes_process_is_followed() -> None:
    # node A's agent names a pod that runs on node B: when that pod is deleted, A's GPU
    # holders change too, though nothing of A changed.
    t0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    state = _fresh(cluster_state(4), t0)
    memo = EngineMemo()
    name = sorted(state.reports)[0]
    other = next(
        p
        for p in state.pods
        if p["spec"].get("nodeName") not in (name, None)
        and p["metadata"]["namespace"] != "kube-system"  # not a plugin pod
    )
    body = _body(state, name)
    body["gpus"][0]["processes"] = [
        {"pid": 9, "used_memory_mib": 512, "pod_uid": other["metadata"]["uid"]}
    ]
    state = _with_report(state, name, body, t0)
    before = _compare(state, memo, t0, t0)
    gone = [p for p in state.pods if p is not other]
    after = _compare(replace(state, pods=gone), memo, t0 + timedelta(seconds=0.5), t0)
    assert memo.delta_builds == 1
    node_before = next(n for n in before.nodes if n.name == name)
    node_after = next(n for n in after.nodes if n.name == name)
    assert node_before.gpus[0] != node_after.gpus[0]


def test_a_holding_pods_new_owner_and_a_new_pending_pod_are_followed() -> None:
    # Usage reads owners and pending pods from the snapshot alone: a build for one pod's
    # change must carry the relabelled holder's new owner and the new pending pod.
    t0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    state = _fresh(cluster_state(4), t0)
    memo = EngineMemo()
    before = _compare(state, memo, t0, t0)
    node = next(n for n in before.nodes if n.owners)
    key = sorted(node.owners)[0]
    pods = list(state.pods)
    index = next(i for i, p in enumerate(pods) if _key(p) == key)
    relabelled = _bump(pods[index], 40_000_001)
    relabelled["metadata"]["labels"] = {"user": "zoe"}
    waiting = _bump(pods[index], 40_000_002)
    waiting["metadata"].update(name="waiting-0", uid="uid-waiting-0", labels={"owner": "erin"})
    waiting["spec"].pop("nodeName")
    waiting["status"] = {"phase": "Pending"}
    pods[index] = relabelled
    after = _compare(replace(state, pods=[*pods, waiting]), memo, t0 + timedelta(seconds=0.5), t0)
    assert memo.delta_builds == 1
    namespace = key.partition("/")[0]
    assert next(n for n in after.nodes if n.name == node.name).owners[key] == f"{namespace}/zoe"
    assert [(p.pod, p.owner) for p in after.pending_pods] == [
        (f"{namespace}/waiting-0", f"{namespace}/erin")
    ]


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def test_a_stale_agents_node_is_looked_at_by_every_build() -> None:
    t0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    state = _fresh(cluster_state(4), t0)
    name = sorted(state.reports)[1]
    reports = dict(state.reports)
    reports[name] = ReceivedReport(report=reports[name].report, received_at=t0 - timedelta(hours=1))
    state = replace(state, reports=reports)
    memo = EngineMemo()
    _compare(state, memo, t0, t0)
    state = _with_report(state, name, _body(state, name), t0 + timedelta(seconds=0.2))
    snapshot = _compare(state, memo, t0 + timedelta(seconds=0.3), t0)
    assert memo.delta_builds == 1
    agent = next(n for n in snapshot.nodes if n.name == name).agent
    assert agent is not None and agent.fresh  # reported again: fresh at once


def test_a_new_clock_or_node_list_asks_every_node() -> None:
    t0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    state = _fresh(cluster_state(4), t0)
    memo = EngineMemo()
    _compare(state, memo, t0, t0)
    _compare(state, memo, t0 + timedelta(seconds=2), t0 + timedelta(seconds=2))
    assert memo.delta_builds == 0  # the ages reckoned anew
    _compare(replace(state, nodes=list(state.nodes)[1:]), memo, t0 + timedelta(seconds=3), t0)
    assert memo.delta_builds == 0  # a node gone
    assert memo.reused == len(state.nodes) - 1


def test_nodes_of_one_name_are_summed_apart_and_the_memo_follows_them() -> None:
    # A list with two nodes of one name (a hand-made state: the API server refuses it)
    # keeps nothing by name: both are counted, with the memo as without it, and once the
    # names are unique again the memo keeps its sums by name from scratch.
    t0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    state = _fresh(cluster_state(3), t0)
    twin = _bump(state.nodes[0], 40_000_001)
    memo = EngineMemo()
    _compare(state, memo, t0, t0)
    doubled = _compare(replace(state, nodes=[*state.nodes, twin]), memo, t0, t0)
    single = build_snapshot(state, options=OPTIONS, now=t0, ages_at=t0)
    first = next(n for n in single.nodes if n.name == twin["metadata"]["name"])
    assert doubled.totals.allocatable == single.totals.allocatable + (first.allocatable or 0)
    assert first.allocatable
    _compare(state, memo, t0 + timedelta(seconds=0.5), t0)
