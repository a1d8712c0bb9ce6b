"""Pods set aside are looked at again only where pods changed (issue 30): the memo's builds
still equal plain builds while pods become unreadable, are fixed and are deleted."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from app.domain.cluster import AccountingOptions
from app.domain.engine.build import build_snapshot
from app.domain.engine.memo import EngineMemo
from tests.bench.engine_bench import _bump, cluster_state


def test_set_aside_pods_follow_pod_churn_with_the_memo() -> None:
    state = cluster_state(10)
    options = AccountingOptions()
    memo = EngineMemo()
    rng = random.Random(5)
    now = datetime(2026, 12, 4, 1, 0, tzinfo=UTC)
    build_snapshot(state, options=options, now=now, memo=memo)
    version = 30_000_000
    seen_aside = 0
    for step in range(30):
        pods = list(state.pods)
        index = rng.choice(
            [i for i, p in enumerate(pods) if p["metadata"]["namespace"] != "kube-system"]
        )
        version += 1
        kind = rng.choice(["hostile", "hostile", "fixed", "delete"])
        if kind == "delete":
            del pods[index]
        else:
            pod = _bump(pods[index], version)
            limits = (
                pod["spec"]["containers"][0].setdefault("resources", {}).setdefault("limits", {})
            )
            limits["nvidia.com/gpu"] = "2000000" if kind == "hostile" else "1"
            pods[index] = pod
        state = replace(state, pods=pods)
        at = now + timedelta(seconds=step + 1)
        with_memo = build_snapshot(state, options=options, now=at, memo=memo)
        assert with_memo == build_snapshot(state, options=options, now=at), f"step {step}"
        seen_aside = max(
            seen_aside, sum(1 for f in with_memo.findings if f.code == "object-set-aside")
        )
    assert seen_aside >= 2, "the churn never set two pods aside at once"
