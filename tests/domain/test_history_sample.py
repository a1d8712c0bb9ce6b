"""History samples from real snapshots: the physical share each holding stands for."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.domain.history.sample import sample_of
from app.domain.history.showback import HeldSeconds, showback
from app.domain.snapshot import Snapshot
from tests import factories as f
from tests.domain.worlds import snap, ts_world, world

HOUR_S = 3600.0


def _held_pod(name: str, *, namespace: str = "ml", user: str | None = None) -> f.Manifest:
    pod = f.pod(name, namespace=namespace)
    if user:
        pod["metadata"]["labels"] = {"user": user}
    return pod


def test_quarter_time_slice_held_four_hours_is_one_gpu_hour() -> None:
    pod = _held_pod("train-0", user="carol")
    state = ts_world(
        4,
        pods=[pod],
        report_kwargs={"assignments": [f.assignment("train-0", [f"{f.gpu_uuid('gpu-1', 0)}::0"])]},
        readings=[f.gpu(0, processes=[f.proc(7, pod_uid="uid-train-0")]), *f.gpus(4)[1:]],
    )
    sample = sample_of(snap(state), [pod], at=f.NOW)
    (holding,) = sample.holdings
    assert (holding.namespace, holding.owner, holding.node) == ("ml", "ml/carol", "gpu-1")
    assert holding.share == pytest.approx(0.25)
    assert (holding.used_share, holding.idle_share) == pytest.approx((0.25, 0.0))
    assert holding.slots == (("nvidia.com/gpu", 1),)
    four_hours = HeldSeconds(
        "ml",
        "ml/carol",
        "gpu-1",
        share_s=holding.share * 4 * HOUR_S,
        used_s=holding.used_share * 4 * HOUR_S,
    )
    result = showback([four_hours], "owner", physical_gpu_s=4 * 4 * HOUR_S)
    assert [(row.key, row.gpu_hours, row.used_gpu_hours) for row in result.rows] == [
        ("ml/carol", 1.0, 1.0)
    ]
    assert (result.gpu_hours, result.physical_gpu_hours) == (1.0, 16.0)


def test_whole_gpu_held_with_no_process_is_idle_share_one() -> None:
    pod = _held_pod("infer-0", namespace="serving")
    state = world(
        pods=[pod],
        report_kwargs={
            "assignments": [f.assignment("infer-0", [f.gpu_uuid("gpu-1", 2)], namespace="serving")]
        },
    )
    sample = sample_of(snap(state), [pod], at=f.NOW)
    (holding,) = sample.holdings
    assert (holding.share, holding.used_share, holding.idle_share) == (1.0, 0.0, 1.0)
    (hold,) = sample.holds
    assert (hold.gpu_index, hold.pod, hold.slots, hold.mode, hold.replicas) == (
        2,
        "serving/infer-0",
        1,
        "basic",
        1,
    )
    assert [gpu.gpu_index for gpu in sample.gpus] == [0, 1, 2, 3]


def test_stale_agent_leaves_used_and_idle_unknown() -> None:
    pod = _held_pod("infer-0")
    state = world(
        pods=[pod],
        report_kwargs={
            "assignments": [f.assignment("infer-0", [f.gpu_uuid("gpu-1", 0)])],
            "received_at": f.NOW - timedelta(hours=1),
        },
    )
    (holding,) = sample_of(snap(state), [pod], at=f.NOW).holdings
    assert (holding.share, holding.used_share, holding.idle_share) == (1.0, 0.0, 0.0)


def _fraction_world(*fractions: str) -> tuple[list[f.Manifest], Snapshot]:
    uuid = f.gpu_uuid("gpu-1", 0)
    pods = [
        f.reservation_pod("g1", uuid),
        *(
            f.fraction_pod(f"f{i}", annotations={"gpu-fraction": share}, group="g1")
            for i, share in enumerate(fractions)
        ),
    ]
    return pods, snap(world(pods=pods, readings=f.gpus(1), allocatable=1))


def test_fractions_take_their_share_from_the_reservation_pod() -> None:
    pods, snapshot = _fraction_world("0.5", "0.25")
    shares = {h.owner: h.share for h in sample_of(snapshot, pods, at=f.NOW).holdings}
    assert shares == {
        "kai-resource-reservation/gpu-reservation-gpu-1-g1": 0.25,
        "ml/f0": 0.5,
        "ml/f1": 0.25,
    }


def test_fractions_over_one_gpu_are_scaled_to_it() -> None:
    """0.8 + 0.8 asked of one GPU (KAI isolates no memory): 1 GPU held, half each."""
    pods, snapshot = _fraction_world("0.8", "0.8")
    holdings = sample_of(snapshot, pods, at=f.NOW).holdings
    assert {h.owner: h.share for h in holdings if h.share} == {"ml/f0": 0.5, "ml/f1": 0.5}
    assert sum(h.share for h in holdings) == 1.0
