"""Usage per namespace/owner/node from holders, GPU processes, idle holders and pending pods."""

from __future__ import annotations

import pytest

from app.domain.accounting.pods import read_pod
from app.domain.cluster import Manifest
from app.domain.usage.holders import owner_of, pending_pod, pod_usages, usage_rows
from app.domain.usage.shares import profile_share
from tests.web.page_snapshots import demo_like


def pending_manifest(name: str, gpus: int, *, labels: dict[str, str]) -> Manifest:
    return {
        "metadata": {"name": name, "namespace": "research", "labels": labels},
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]
        },
        "status": {"phase": "Pending"},
    }


def test_owner_is_label_then_controller_then_pod() -> None:
    labelled = {"metadata": {"namespace": "ml", "name": "a", "labels": {"user": "carol"}}}
    controlled = {
        "metadata": {
            "namespace": "ml",
            "name": "b-x1",
            "ownerReferences": [{"kind": "Job", "name": "b", "controller": True}],
        }
    }
    bare = {"metadata": {"namespace": "ml", "name": "c"}}
    assert [owner_of(p) for p in (labelled, controlled, bare)] == [
        "ml/carol",
        "ml/b",
        "ml/c",
    ]


def test_usage_rows_add_up_holders_and_pending_demand() -> None:
    waiting = pending_manifest("big-0", 4, labels={"user": "erin"})
    snapshot = demo_like().model_copy(
        update={"pending_pods": [pending_pod(read_pod(waiting), waiting)]}
    )
    usages = pod_usages(snapshot)
    by_namespace = {row.key: row for row in usage_rows(usages, "namespace")}
    assert (by_namespace["research"].pending_pods, by_namespace["research"].pending_slots) == (1, 4)
    assert by_namespace["research"].slots_held == 0
    serving = by_namespace["serving"]
    assert (serving.slots_held, serving.pods, serving.idle_slots) == (1, 1, 0)
    by_owner = [row.key for row in usage_rows(usages, "owner")]
    assert "research/erin" in by_owner
    by_node = {row.key: row.slots_held for row in usage_rows(usages, "node")}
    assert by_node["-"] == 0  # pending pods have no node yet


@pytest.mark.parametrize(
    ("profile", "share"),
    [("1g.10gb", 1 / 7), ("3g.40gb", 3 / 7), ("7g.80gb", 1.0), ("1g.10gb+me", 1 / 7), (None, 1.0)],
)
def test_mig_profile_share_of_its_gpu(profile: str | None, share: float) -> None:
    assert profile_share(profile) == pytest.approx(share)
