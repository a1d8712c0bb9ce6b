"""Reports and peers under the same rules (issue 33): MIG bounds, unique MIG UUIDs, peer time.

A MIG `memory_total_mib` of 10**400 was accepted (202) and served back; a MIG UUID twice, or
on two GPUs, was accepted; a peer replica's copy dated a day ahead was stored, after which the
real agent's reports got 409.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI

from app.domain.report import AgentReport, ReceivedReport
from app.web.services.reports.store import ReportStore
from app.web.services.reports.sync import PEER_PATH, PeerReportsOut, ReportSync
from tests.conftest import stack_settings
from tests.live import LiveServer, wait_for
from tests.web.test_report_trust import NOW, Clock, gpu, make_app, post, report, stored_at

MIG = "MIG-11111111-2222-3333-4444-555555555555"


def _mig(uuid: str = MIG, **overrides: Any) -> dict[str, Any]:
    return {"uuid": uuid, "profile": "3g.40gb", "memory_total_mib": 40192, **overrides}


@pytest.mark.parametrize(
    ("why", "gpus"),
    [
        (
            "MIG memory 10**400",
            [gpu(0, mig_mode="enabled", mig_devices=[_mig(memory_total_mib=10**400)])],
        ),
        (
            "MIG memory past 1 TiB",
            [gpu(0, mig_mode="enabled", mig_devices=[_mig(memory_used_mib=(1 << 20) + 1)])],
        ),
        (
            "MIG instance 10**30",
            [gpu(0, mig_mode="enabled", mig_devices=[_mig(gpu_instance=10**30)])],
        ),
        ("a MIG UUID twice on a GPU", [gpu(0, mig_mode="enabled", mig_devices=[_mig(), _mig()])]),
        (
            "a MIG UUID on two GPUs",
            [
                gpu(0, mig_mode="enabled", mig_devices=[_mig()]),
                gpu(1, mig_mode="enabled", mig_devices=[_mig()]),
            ],
        ),
        (
            "a MIG UUID with shell syntax",
            [gpu(0, mig_mode="enabled", mig_devices=[_mig("MIG-$(reboot)")])],
        ),
    ],
)
def test_mig_report_beyond_its_bounds_is_422_and_nothing_is_stored(
    why: str, gpus: list[dict[str, Any]]
) -> None:
    app = make_app(Clock())
    response = post(app, report(gpus=gpus))
    assert response.status_code == 422, why
    assert stored_at(app) is None


def test_a_good_mig_report_is_accepted() -> None:
    app = make_app(Clock())
    gpus = [gpu(0, mig_mode="enabled", mig_devices=[_mig(), _mig(MIG.replace("1", "9"))])]
    assert post(app, report(gpus=gpus)).status_code == 202


@pytest.fixture
def peer() -> Iterator[tuple[str, list[ReceivedReport]]]:
    """A peer replica answering PEER_PATH with the reports the test puts in its list."""
    served: list[ReceivedReport] = []
    app = FastAPI()

    @app.get(PEER_PATH)
    def reports() -> PeerReportsOut:
        return PeerReportsOut(reports=served)

    server = LiveServer(app)
    yield server.start(), served
    server.stop()


def _received(at: datetime) -> ReceivedReport:
    return ReceivedReport(report=AgentReport.model_validate(report(at=at)), received_at=at)


def test_a_peer_copy_dated_ahead_is_refused_and_the_real_agent_goes_on(
    peer: tuple[str, list[ReceivedReport]],
) -> None:
    url, served = peer
    served.append(_received(NOW + timedelta(days=1)))
    store = ReportStore()
    sync = ReportSync(
        stack_settings(peers=url, report_wait_s=0),
        store,
        snapshot_ready=lambda: True,
        wall_clock=lambda: NOW,
    )
    sync.start()
    wait_for(lambda: sync.state().done, what="the peer sync")
    sync.stop()
    assert sync.state().how == "reports from peers: 1 of 1 answered, 0 reports"
    assert store.latest() == {}
    real = AgentReport.model_validate(report(at=NOW))
    assert store.accept(real, received_at=NOW).value == "stored"  # not 409


def test_a_peer_copy_within_the_skew_is_stored_with_its_arrival_never_ahead(
    peer: tuple[str, list[ReceivedReport]],
) -> None:
    url, served = peer
    ahead = ReceivedReport(
        report=AgentReport.model_validate(report(at=NOW)), received_at=NOW + timedelta(days=1)
    )
    served.append(ahead)
    store = ReportStore()
    sync = ReportSync(
        stack_settings(peers=url, report_wait_s=0),
        store,
        snapshot_ready=lambda: True,
        wall_clock=lambda: NOW.astimezone(UTC),
    )
    sync.start()
    wait_for(lambda: sync.state().done, what="the peer sync")
    sync.stop()
    assert store.latest()["gpu-1"].received_at == NOW
