"""Properties of DRA accounting over generated claims: totals add up, holders name claims."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain.cluster import ClusterState
from tests.domain.dra_worlds import claim, claim_pod, dra_world
from tests.domain.worlds import snap

SHARING = [
    None,
    {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}},
    {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}},
]


@st.composite
def dra_clusters(draw: st.DrawFn) -> ClusterState:
    claims: list[Any] = []
    pods: list[Any] = []
    free = [f"gpu-{i}" for i in range(4)]
    for n in range(draw(st.integers(min_value=0, max_value=6))):
        name = f"c{n}"
        allocated = draw(st.booleans()) and bool(free)
        devices = [free.pop(draw(st.integers(0, len(free) - 1)))] if allocated else []
        users = [f"p{n}-{k}" for k in range(draw(st.integers(0, 3)))] if allocated else []
        claims.append(
            claim(
                name,
                devices=devices,
                reserved=users,
                count=draw(st.integers(1, 5)),
                sharing=draw(st.sampled_from(SHARING)),
            )
        )
        pods += [claim_pod(user, name) for user in users]
    return dra_world(claims=claims, pods=pods, dra_ready=draw(st.booleans()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dra_clusters())
def test_dra_totals_add_up_and_every_dra_holder_names_its_claim(state: ClusterState) -> None:
    snapshot = snap(state)
    dra = snapshot.dra
    assert dra.devices == 4
    assert dra.allocated + dra.free + dra.stranded == dra.devices
    assert 0 <= dra.shared <= dra.allocated
    assert dra.pending_claims == sum(1 for c in state.resource_claims if not c["status"])
    node = next(n for n in snapshot.nodes if n.name == "dra-1")
    assert node.allocation == "dra"
    holders = [h for g in node.gpus for h in g.holders]
    assert all(h.source == "dra" and h.claim and h.sharing and h.device for h in holders)
    assert len(holders) == sum(
        len(c["status"].get("reservedFor", [])) for c in state.resource_claims
    )
    assert all(g.held_slots == 0 and g.slots == 0 for g in node.gpus)
