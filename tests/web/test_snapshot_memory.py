"""Node states share their models' field-name sets (issue 30: ~250 MiB at 10,000 nodes),
from the first build on and after their agents were renewed; their JSON does not change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.domain.cluster import AccountingOptions
from app.domain.report import AgentReport
from app.domain.snapshot import NodeState
from app.web.services.reports.node_roster import NodeRoster
from app.web.services.reports.store import ReportStore
from app.web.services.snapshots.builder import SnapshotBuilder
from tests.bench.engine_bench import cluster_state
from tests.web.fakes import FakeSource

LATER = datetime(2030, 1, 1, tzinfo=UTC)  # after the reports cluster_state dates now


def _sets(snapshot_nodes: list[NodeState]) -> list[int]:
    found: list[int] = []
    for node in snapshot_nodes:
        found.append(id(node.__pydantic_fields_set__))
        assert node.agent is not None
        found.append(id(node.agent.__pydantic_fields_set__))
        found += [id(gpu.__pydantic_fields_set__) for gpu in node.gpus]
        found += [id(pod.__pydantic_fields_set__) for pod in node.pods]
    return found


def test_node_states_share_field_sets_before_and_after_a_renewal() -> None:
    state = cluster_state(6)
    source = FakeSource(
        nodes=list(state.nodes), pods=list(state.pods), daemonsets=[state.daemonset]
    )
    store = ReportStore()
    for received in state.reports.values():
        store.accept(received.report, received_at=LATER)
    builder = SnapshotBuilder(store, options=AccountingOptions(), roster=NodeRoster())
    first = builder.build(source, now=LATER)
    dumped = [node.model_dump_json() for node in first.nodes]
    ids = _sets(first.nodes)
    assert len(ids) > 100 and len(set(ids)) <= 12  # a handful, not one per model
    for received in store.latest().values():
        body = received.report.model_dump(mode="json", by_alias=True)
        body["collected_at"] = (LATER + timedelta(seconds=15)).isoformat()
        store.accept(AgentReport.model_validate(body), received_at=LATER + timedelta(seconds=15))
    second = builder.build(source, now=LATER + timedelta(seconds=15))
    assert all(a is not b for a, b in zip(first.nodes, second.nodes, strict=True))
    assert set(_sets(second.nodes)) <= set(_sets(first.nodes))
    renewed = [node.model_dump_json() for node in second.nodes]
    assert dumped != renewed  # the agents' times moved ...
    assert [n.model_dump(exclude={"agent"}) for n in first.nodes] == [
        n.model_dump(exclude={"agent"}) for n in second.nodes
    ]  # ... and nothing else
