"""The engine memo is an optimisation only: with it, every build equals a build without it."""

from __future__ import annotations

from tests.bench.engine_bench import check_memo, cluster_state


def test_build_snapshot_with_memo_equals_plain_build_after_every_kind_of_change() -> None:
    # check_memo applies pod, node, report, DaemonSet and staleness changes between builds
    # and raises AssertionError naming the first figure where the two builds differ.
    check_memo(cluster_state(12))
