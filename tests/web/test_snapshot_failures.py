"""A failed snapshot build never freezes the dashboard silently (issue 15).

Once a report with a GPU 10**400 MiB large stopped every build while /readyz said ok and
`stale` stayed false. Now such a report is refused at the door, and if a build fails for
any reason the last good snapshot is served marked stale, with the reason, and /readyz says
degraded. A property test posts random reports over HTTP and requires the build to hold.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain.cluster import Manifest
from tests.conftest import runtime_of
from tests.web.fakes import FakeSource, fake_source
from tests.web.test_report_trust import NOW, URL, Clock, make_app


class BrokenPods(FakeSource):
    """A source whose pod list blows up while `broken` is set (any failure will do)."""

    broken = False

    def items(self, name: str, namespace: str | None = None) -> list[Manifest]:
        if name == "pods" and self.broken:
            raise RuntimeError("pods list is corrupt")
        return super().items(name, namespace)


def test_failed_build_serves_the_last_good_snapshot_stale_with_the_reason() -> None:
    app = make_app(Clock())
    service = runtime_of(app).snapshots
    good = service.current()
    assert good is not None and not good.stale
    source = BrokenPods(**fake_source(runtime_of(app)).collections)
    service._source = source  # the same collections, now failing
    source.broken = True
    client = TestClient(app)

    with pytest.raises(RuntimeError):
        service.rebuild()

    ready = client.get("/readyz").json()
    assert ready["status"] == "degraded"
    assert ready["reason"] == "snapshot build failed: RuntimeError: pods list is corrupt"
    summary = client.get("/api/v1/summary").json()
    assert summary["stale"] is True
    assert summary["stale_reason"] == "snapshot build failed: RuntimeError: pods list is corrupt"
    assert summary["totals"] == good.totals.model_dump(mode="json")
    nodes = client.get("/api/v1/nodes").json()
    assert nodes["stale"] is True and [n["name"] for n in nodes["nodes"]] == ["gpu-1", "gpu-2"]

    source.broken = False
    service.rebuild()
    assert client.get("/readyz").json()["status"] == "ok"
    recovered = client.get("/api/v1/summary").json()
    assert recovered["stale"] is False and recovered["stale_reason"] is None


def test_build_failing_from_the_start_says_why_in_readyz() -> None:
    app = make_app(Clock())
    service = runtime_of(app).snapshots
    source = BrokenPods(**fake_source(runtime_of(app)).collections)
    source.broken = True
    service._source = source
    service._current = service._good = None  # a fresh process whose first build fails
    with pytest.raises(RuntimeError):
        service.rebuild()
    response = TestClient(app).get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "starting",
        "reason": "snapshot build failed: RuntimeError: pods list is corrupt",
        "stale_age_s": None,
        # one replica (app.web.services.reports.sync)
        "reports": "no peers configured and no report wait",
    }


# Any JSON-ish value, including huge and odd numbers, strings where numbers belong, nulls.
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
NUMBER = st.one_of(st.integers(min_value=-(10**30), max_value=10**400), LEAF)
PROCESS = st.fixed_dictionaries(
    {"pid": NUMBER},
    optional={
        "used_memory_mib": NUMBER,
        "pod_uid": st.one_of(st.none(), st.text(max_size=70)),
        "command": st.one_of(st.none(), st.text(max_size=50)),
        "user": st.one_of(st.none(), st.text(max_size=20)),
        "visible": LEAF,
    },
)
GPU = st.fixed_dictionaries(
    {
        "index": st.one_of(st.integers(min_value=0, max_value=7), NUMBER),
        "uuid": st.one_of(st.sampled_from([f"GPU-{i}" for i in range(8)]), st.text(max_size=20)),
    },
    optional={
        "memory_total_mib": NUMBER,
        "memory_used_mib": NUMBER,
        "utilization_pct": NUMBER,
        "mig_mode": st.one_of(st.sampled_from(["enabled", "disabled"]), LEAF),
        "processes": st.lists(PROCESS, max_size=4),
    },
)
REPORT = st.fixed_dictionaries(
    {
        "schema": st.one_of(st.just(1), LEAF),
        "node": st.sampled_from(["gpu-1", "gpu-2", "made-up-1", "Bad Node", ""]),
        "collected_at": st.datetimes(
            min_value=NOW.replace(tzinfo=None).replace(year=2000),
            max_value=NOW.replace(tzinfo=None).replace(year=2100),
        ).map(lambda moment: moment.isoformat() + "Z"),
        "source": st.sampled_from(["nvml", "nvidia-smi", "none", "x"]),
        "gpus": st.lists(GPU, max_size=6),
    },
)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(reports=st.lists(REPORT, min_size=1, max_size=4))
def test_random_reports_over_http_never_stop_the_snapshot(reports: list[dict[str, Any]]) -> None:
    app = make_app(Clock(), agent_token="t" * 24, agent_auth="shared-token")
    client = TestClient(app, raise_server_exceptions=False)
    headers = {"Authorization": "Bearer " + "t" * 24}
    for body in reports:
        response = client.post(URL, json=body, headers=headers)
        assert response.status_code in (202, 200, 409, 422), response.text
    snapshot = runtime_of(app).snapshots.rebuild()
    assert runtime_of(app).snapshots.last_error is None
    assert [node.name for node in snapshot.nodes] == ["gpu-1", "gpu-2"]
    assert client.get("/").status_code == 200
    assert client.get("/nodes/gpu-1").status_code == 200


# Reports inside every bound, at its edges: the engine must take all of them.
MIB = st.integers(min_value=0, max_value=1 << 20)
VALID_GPU = st.builds(
    lambda total, used, util, procs: {
        "uuid": "",
        "memory_total_mib": total,
        "memory_used_mib": used,
        "utilization_pct": util,
        "processes": procs,
    },
    st.one_of(st.none(), MIB),
    st.one_of(st.none(), MIB),
    st.one_of(st.none(), st.integers(min_value=0, max_value=100)),
    st.lists(
        st.fixed_dictionaries(
            {"pid": st.integers(min_value=0, max_value=1 << 22)},
            optional={"used_memory_mib": st.one_of(st.none(), MIB), "visible": st.booleans()},
        ),
        max_size=5,
    ),
)


def _numbered(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**gpu, "index": i, "uuid": f"GPU-{i:04x}-edge"} for i, gpu in enumerate(gpus)]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    gpus=st.lists(VALID_GPU, max_size=64).map(_numbered), node=st.sampled_from(["gpu-1", "gpu-2"])
)
def test_reports_at_the_edges_of_their_bounds_are_taken_and_the_snapshot_builds(
    gpus: list[dict[str, Any]], node: str
) -> None:
    app = make_app(Clock(), agent_token="t" * 24, agent_auth="shared-token")
    client = TestClient(app, raise_server_exceptions=False)
    body = {
        "schema": 1,
        "node": node,
        "collected_at": NOW.isoformat(),
        "source": "nvml",
        "gpus": gpus,
    }
    response = client.post(URL, json=body, headers={"Authorization": "Bearer " + "t" * 24})
    assert response.status_code == 202, response.text
    snapshot = runtime_of(app).snapshots.rebuild()
    [state] = [n for n in snapshot.nodes if n.name == node]
    assert state.physical_gpus == len(gpus)
    assert client.get(f"/nodes/{node}").status_code == 200
    assert client.get("/metrics").status_code == 200
