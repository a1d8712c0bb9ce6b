"""Usage reads the published snapshot alone (issue 47 item 4).

The engine builds a snapshot of one node with a labelled holder, a holder owned by its
controller, a pending pod and a pending pod asking for `"1Ei"` GPUs; the idle history's
typed part says one holder is idle. The fake runtime that serves it has no pod in its cache
and no `slot-held-idle` finding: every owner, pending pod and idle slot the answers show can
only have come from the snapshot's own fields.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.domain.snapshot import Snapshot
from app.domain.usage.idle import IdleHolder, idle_slots
from app.web.routes import usage_api
from tests import factories as f
from tests.domain.worlds import snap, world
from tests.web.page_snapshots import FakeRuntime, page_app


def _pods() -> list[f.Manifest]:
    carol = f.pod("train-0", gpus=2)
    carol["metadata"]["labels"] = {"user": "carol"}
    infer = f.pod("infer-x1", namespace="serving")
    infer["metadata"]["ownerReferences"] = [
        {"kind": "ReplicaSet", "name": "infer", "controller": True}
    ]
    waiting = f.pod("big-0", node=None, gpus=3, namespace="research", phase="Pending")
    waiting["metadata"]["labels"] = {"owner": "erin"}
    greedy = f.pod("greedy", node=None, namespace="research", phase="Pending")
    greedy["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1Ei"
    return [carol, infer, waiting, greedy]


def _snapshot() -> Snapshot:
    built = snap(world(pods=_pods()))
    gpu = f.gpu_uuid("gpu-1", 0)
    idle = IdleHolder(
        "gpu-1", gpu, 0, "ml/train-0", 2, idle_s=1500.4, held_s=1600, watched_since=f.NOW
    )
    return built.model_copy(update={"idle_slots": idle_slots([idle])})


@pytest.fixture
def served() -> tuple[TestClient, FakeRuntime]:
    app, runtime = page_app(_snapshot())
    app.include_router(usage_api.router)
    return TestClient(app), runtime


def _usage(client: TestClient, by: str) -> dict[str, Any]:
    answer = client.get("/api/v1/usage", params={"by": by})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_usage_answers_from_a_snapshot_with_no_pods_in_the_cache(
    served: tuple[TestClient, FakeRuntime],
) -> None:
    client, runtime = served
    snapshot = runtime.snapshots.current()
    assert snapshot is not None
    assert runtime.source.items("pods") == []  # nothing to re-read
    assert "slot-held-idle" not in {item.code for item in snapshot.findings}
    aside = {f.evidence.get("object") for f in snapshot.findings if f.code == "object-set-aside"}
    assert "Pod research/greedy" in aside
    rows = {
        row["key"]: (
            row["slots_held"],
            row["idle_slots"],
            row["pending_pods"],
            row["pending_slots"],
        )
        for row in _usage(client, "owner")["rows"]
    }
    assert rows == {
        "ml/carol": (2, 2, 0, 0),
        "serving/infer": (1, 0, 0, 0),
        "research/erin": (0, 0, 1, 3),
    }
    pods = {p["pod"]: p for p in _usage(client, "namespace")["pods"]}
    assert set(pods) == {"ml/train-0", "serving/infer-x1", "research/big-0"}
    assert (pods["ml/train-0"]["owner"], pods["ml/train-0"]["idle_for_s"]) == ("ml/carol", 1500)
    assert pods["research/big-0"]["pending"] is True
    by_node = {row["key"]: row["slots_held"] for row in _usage(client, "node")["rows"]}
    assert by_node == {"gpu-1": 3, "-": 0}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_usage_page_shows_the_snapshots_owners_in_both_languages(
    served: tuple[TestClient, FakeRuntime], lang: str
) -> None:
    client, _ = served
    page = client.get("/usage", params={"by": "owner", "lang": lang})
    assert page.status_code == 200
    for owner in ("ml/carol", "serving/infer", "research/erin"):
        assert f'data-testid="usage-row" data-key="{owner}"' in page.text
