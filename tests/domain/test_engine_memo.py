"""The engine memo is an optimisation only: with it, every build equals a build without it."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from app.domain.accounting.pod_index import index_pods
from app.domain.accounting.pods import read_pod
from app.domain.cluster import AccountingOptions, Manifest
from app.domain.engine.build import build_snapshot, plugin_specs
from app.domain.engine.memo import EngineMemo
from app.domain.report import ReceivedReport
from tests import factories
from tests.bench.engine_bench import _bump, check_memo, cluster_state


def test_build_snapshot_with_memo_equals_plain_build_after_every_kind_of_change() -> None:
    # check_memo applies pod, node, report, DaemonSet and staleness changes between builds
    # and raises AssertionError naming the first figure where the two builds differ.
    check_memo(cluster_state(12))


def test_pod_index_kept_up_to_date_equals_plain_build_under_random_pod_churn() -> None:
    # Pods finish, move, are deleted and created between builds (a few at a time, mixed, as
    # watch events bring them): the index updated in place must give the very snapshot a plain
    # build gives, and it must have been updated rather than rebuilt. 40 nodes: 1,200 pods,
    # so changes fall in different chunks of the list comparison (pod_index.CHUNK).
    state = cluster_state(40)
    options = AccountingOptions()
    memo = EngineMemo()
    rng = random.Random(11)
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    nodes = [n["metadata"]["name"] for n in state.nodes]
    build_snapshot(state, options=options, now=now, memo=memo)
    version = 20_000_000
    for step in range(40):
        pods = list(state.pods)
        for _ in range(rng.randint(1, 3)):
            movable = [i for i, p in enumerate(pods) if p["metadata"]["namespace"] != "kube-system"]
            index = rng.choice(movable)
            version += 1
            kind = rng.choice(["finish", "move", "delete", "create"])
            if kind == "delete":
                del pods[index]  # the pods after it move up a place
                continue
            pod = _bump(pods[index], version)
            if kind == "finish":
                pod["status"]["phase"] = rng.choice(["Succeeded", "Failed", "Running"])
            elif kind == "move":
                pod["spec"]["nodeName"] = rng.choice(nodes)
            else:
                pod["metadata"].update(name=f"new-{version}", uid=f"uid-new-{version}")
                pods.append(pod)
                continue
            pods[index] = pod
        state = replace(state, pods=pods)
        at = now + timedelta(seconds=step + 1)
        with_memo = build_snapshot(state, options=options, now=at, memo=memo)
        assert with_memo == build_snapshot(state, options=options, now=at), f"step {step}"
        assert memo.pod_index is not None
        specs = plugin_specs(state)
        kept = memo.pod_index.index(state.pods, specs)  # nothing changed since: the same
        fresh = index_pods(state.pods, specs, [read_pod(p) for p in state.pods])
        assert kept == fresh, f"step {step}"
        assert kept.changed == frozenset(), f"nothing changed since, step {step}"
        assert list(kept.pods_by_uid) == list(fresh.pods_by_uid), f"order, step {step}"
    assert memo.pod_index is not None
    assert memo.pod_index.incremental >= 30


def _versioned(manifest: Manifest, version: int) -> Manifest:
    return {**manifest, "metadata": {**manifest["metadata"], "resourceVersion": str(version)}}


def test_pod_findings_follow_a_config_change_while_no_pod_changed() -> None:
    # The pods stay the very same objects; the ConfigMap turns on time-slicing, so the pod
    # asking for 2 slots gets its finding, exactly as a plain build says.
    daemonset = _versioned(
        factories.plugin_daemonset(
            configmap=factories.CONFIGMAP, config_file="/config/config.yaml"
        ),
        1,
    )
    plain_config = factories.configmap({"config.yaml": "version: v1\n"})
    shared = factories.configmap({"config.yaml": factories.time_slicing_yaml(4)})
    pods = [_versioned(factories.pod("train", gpus=2), 3)]
    before = factories.cluster(
        daemonset=daemonset,
        configmaps=[_versioned(plain_config, 4)],
        nodes=[_versioned(factories.node("gpu-1", allocatable=8), 2)],
        pods=pods,
    )
    after = replace(before, configmaps={factories.CONFIGMAP: _versioned(shared, 5)})
    options = AccountingOptions()
    memo = EngineMemo()
    ids = []
    for state in (before, after):
        with_memo = build_snapshot(state, options=options, now=factories.NOW, memo=memo)
        assert with_memo == build_snapshot(state, options=options, now=factories.NOW)
        ids.append(sorted(f.code for f in with_memo.findings if f.pod == "ml/train"))
    assert ids == [[], ["multi-slot-request-shared"]]


def test_fraction_holders_follow_an_annotation_change_with_the_memo() -> None:
    # A fraction pod's annotation changes (new resourceVersion): the node that reads it is
    # recomputed, and the memo's build equals a plain one.
    gpu0 = factories.gpu_uuid("gpu-1", 0)
    reservation = _versioned(factories.reservation_pod("g1", gpu0), 7)
    before_pod = factories.fraction_pod("a", annotations={"gpu-fraction": "0.5"}, group="g1")
    after_pod = factories.fraction_pod("a", annotations={"gpu-fraction": "0.75"}, group="g1")
    readings = [factories.gpu(0, processes=[factories.proc(5, mib=100, pod_uid="uid-a")])]
    before = factories.cluster(
        daemonset=_versioned(factories.plugin_daemonset(), 1),
        nodes=[_versioned(factories.node("gpu-1", allocatable=1), 2)],
        pods=[_versioned(factories.plugin_pod("gpu-1"), 3), reservation, _versioned(before_pod, 8)],
        reports=[factories.report("gpu-1", readings)],
    )
    after = replace(before, pods=[*before.pods[:2], _versioned(after_pod, 9)])
    options = AccountingOptions()
    memo = EngineMemo()
    shares = []
    for state in (before, after):
        with_memo = build_snapshot(state, options=options, now=factories.NOW, memo=memo)
        assert with_memo == build_snapshot(state, options=options, now=factories.NOW)
        shares.append([h.share for h in with_memo.nodes[0].gpus[0].holders])
    assert shares == [[None, 0.5], [None, 0.75]]


def test_ages_kept_from_an_earlier_moment_equal_a_plain_build_of_that_moment() -> None:
    """A build that keeps the ages of the latest reckoning (`ages_at`, issue 30) gives what
    a plain build gives with the same `ages_at`, a node reporting meanwhile included; an
    agent stale at `ages_at` is stale in both."""
    state = cluster_state(60)
    options = AccountingOptions()
    memo = EngineMemo()
    start = datetime.now(UTC)
    build_snapshot(state, options=options, now=start, memo=memo)
    reckoned = start + timedelta(seconds=3)
    later = reckoned + timedelta(seconds=2)
    reports = dict(state.reports)
    name = sorted(reports)[5]
    # renewed after the reckoning
    reports[name] = ReceivedReport(report=reports[name].report, received_at=later)
    renewed = replace(state, reports=reports)
    for now, current in ((reckoned, state), (later, renewed)):
        with_memo = build_snapshot(current, options=options, now=now, memo=memo, ages_at=reckoned)
        plain = build_snapshot(current, options=options, now=now, ages_at=reckoned)
        assert with_memo == plain
    ages = {n.name: n.agent.age_s for n in with_memo.nodes if n.agent is not None}
    assert ages[name] == 0  # received after the reckoning: no older than it
    assert with_memo.generated_at == later

    stale_at = start + timedelta(seconds=options.agent_stale_after_s + 5)
    with_memo = build_snapshot(state, options=options, now=stale_at, memo=memo, ages_at=stale_at)
    plain = build_snapshot(state, options=options, now=stale_at, ages_at=stale_at)
    assert with_memo == plain
    assert all(n.agent is None or not n.agent.fresh for n in with_memo.nodes)
