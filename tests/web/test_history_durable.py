"""The change history outlives Events and the dashboard, through the real app and simulator.

Done when (issue 22): "A change made, the Events deleted, the dashboard restarted: the
change is still listed and can be rolled back."
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client

from app.domain.changes.durable import RECORD_LABEL
from app.kube.client import make_api_client
from app.simulator.world.cluster import SimulatedCluster
from app.web.server import build_app
from tests.conftest import ADMIN_TOKEN, stack_settings
from tests.live import LiveServer, wait_for

PLUGIN_NS = "kube-system"
HISTORY_NS = "gpu-slots"
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
BLIND = {"force": "true"}  # an apply without its preview's token, asked for (else 428)


class Dashboards:
    """One simulated cluster; dashboards started on it one after another (restarts)."""

    def __init__(self, simulator: SimulatedCluster) -> None:
        self.simulator = simulator
        self._running: list[tuple[LiveServer, httpx.Client]] = []
        self.api = make_api_client(host=simulator.url)

    def start(self, **settings: object) -> httpx.Client:
        values: dict[str, object] = {"change_history_namespace": HISTORY_NS, **settings}
        app = build_app(
            stack_settings(**values),
            kube_server=self.simulator.url,
            refresh_interval_s=0.5,
            retry_delay_s=0.1,
        )
        server = LiveServer(app)
        dashboard = httpx.Client(base_url=server.start(), timeout=10)
        self._running.append((server, dashboard))
        wait_for(lambda: dashboard.get("/readyz").status_code == 200, what="dashboard ready")
        return dashboard

    def stop(self, dashboard: httpx.Client) -> None:
        for server, running in list(self._running):
            if running is dashboard:
                running.close()
                server.stop()
                self._running.remove((server, running))

    def close(self) -> None:
        for server, dashboard in reversed(self._running):
            dashboard.close()
            server.stop()
        self.api.close()


@pytest.fixture
def dashboards() -> Iterator[Dashboards]:
    simulator = SimulatedCluster("host-split")
    simulator.start(host="127.0.0.1", port=0)
    started = Dashboards(simulator)
    namespace: Any = {"metadata": {"name": HISTORY_NS}}
    client.CoreV1Api(started.api).create_namespace(namespace)
    yield started
    started.close()
    simulator.stop()


def delete_events(api: client.ApiClient) -> int:
    """Delete every Event of the plugin namespace through the API, as their TTL would."""
    core = client.CoreV1Api(api)
    events = core.list_namespaced_event(PLUGIN_NS).items
    for event in events:
        core.delete_namespaced_event(event.metadata.name, PLUGIN_NS)
    return len(events)


def changes(dashboard: httpx.Client) -> dict[str, Any]:
    response = dashboard.get("/api/v1/changes")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def mode(dashboard: httpx.Client) -> str:
    response = dashboard.get("/api/v1/plugin/config")
    assert response.status_code == 200, response.text
    return str(response.json()["mode"])


def test_history_change_after_events_deleted_and_restart_is_listed_and_rolls_back(
    dashboards: Dashboards,
) -> None:
    first = dashboards.start()
    made = first.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params=BLIND,
        headers=BEARER,
    )
    assert made.status_code == 200, made.text
    change = made.json()["changeId"]
    assert change is not None

    dashboards.stop(first)
    assert delete_events(dashboards.api) >= 1
    assert client.CoreV1Api(dashboards.api).list_namespaced_event(PLUGIN_NS).items == []
    second = dashboards.start()

    listed = changes(second)["changes"]
    assert [(c["id"], c["kind"], c["action"]) for c in listed] == [(change, "mode", "change")]
    assert listed[0]["before"]["mode"] == "basic"
    assert listed[0]["after"]["replicas"] == 4
    page = second.get("/admin/changes?lang=en")
    assert page.status_code == 200 and f'data-id="{change}"' in page.text

    preview = second.post(f"/api/v1/changes/{change}/rollback?dryRun=true", headers=BEARER)
    assert preview.status_code == 200, preview.text
    assert preview.json()["kind"] == "rollback" and preview.json()["after"]["mode"] == "basic"
    assert mode(second) == "time-slicing"  # the preview wrote nothing

    token = {"expectedToken": preview.json()["token"]}
    undone = second.post(f"/api/v1/changes/{change}/rollback", json=token, headers=BEARER)
    assert undone.status_code == 200, undone.text
    assert mode(second) == "basic"
    after = changes(second)["changes"]
    assert [(c["action"], c["rollsBack"]) for c in after] == [
        ("rollback", change),
        ("change", None),
    ]


def test_history_keeps_the_newest_per_setting_and_deletes_the_oldest(
    dashboards: Dashboards,
) -> None:
    dashboard = dashboards.start(change_history_keep=2)
    for replicas in (2, 3, 4):
        body = {"mode": "time-slicing", "replicas": replicas}
        made = dashboard.put("/api/v1/plugin/config", json=body, params=BLIND, headers=BEARER)
        assert made.status_code == 200, made.text

    listed = changes(dashboard)["changes"]
    records = client.CoreV1Api(dashboards.api).list_namespaced_config_map(
        HISTORY_NS, label_selector=RECORD_LABEL
    )
    assert [c["after"]["replicas"] for c in listed] == [4, 3]
    assert len(records.items) == 2


def test_history_with_a_garbage_record_lists_it_unreadable_and_refuses_its_rollback(
    dashboards: Dashboards,
) -> None:
    garbage: Any = {
        "metadata": {"name": "gpu-slots-change-garbage", "labels": {RECORD_LABEL: "mode"}},
        "data": {"record.json": "<html>not a record</html>"},
    }
    client.CoreV1Api(dashboards.api).create_namespaced_config_map(HISTORY_NS, garbage)
    dashboard = dashboards.start()
    made = dashboard.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params=BLIND,
        headers=BEARER,
    )
    assert made.status_code == 200, made.text

    body = changes(dashboard)
    page = dashboard.get("/admin/changes?lang=en")
    refused = dashboard.post("/api/v1/changes/garbage/rollback", params=BLIND, headers=BEARER)

    assert [c["id"] for c in body["changes"]] == [made.json()["changeId"]]
    assert [u["name"] for u in body["unreadable"]] == ["gpu-slots-change-garbage"]
    assert "not JSON" in body["unreadable"][0]["reason"]
    assert page.status_code == 200
    assert 'data-testid="unreadable-row" data-name="gpu-slots-change-garbage"' in page.text
    assert "&lt;html&gt;" not in page.text and "<html>not" not in page.text
    assert "kubectl -n gpu-slots get configmap gpu-slots-change-garbage -o yaml" in page.text
    assert refused.status_code == 409, refused.text
    assert "unreadable" in refused.json()["detail"]
    # in Korean, the reason and the refusal are Korean; the parser's own words stay as quoted
    ko_body = dashboard.get("/api/v1/changes", params={"lang": "ko"}).json()
    assert ko_body["unreadable"][0]["reason"].startswith("record.json이(가) JSON이 아닙니다 (")
    assert "record.json이(가) JSON이 아닙니다" in dashboard.get("/admin/changes?lang=ko").text
    ko_refused = dashboard.post(
        "/api/v1/changes/garbage/rollback?lang=ko&force=true", headers=BEARER
    )
    assert ko_refused.status_code == 409
    assert ko_refused.json()["detail"].startswith("변경 garbage의 기록을 읽을 수 없어 (record.json")


def test_history_not_writable_warns_and_the_change_stays_applied(
    dashboards: Dashboards,
) -> None:
    """A history namespace that does not exist: the change is made, with a warning, unlisted."""
    dashboard = dashboards.start(change_history_namespace="missing")
    made = dashboard.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params=BLIND,
        headers=BEARER,
    )

    assert made.status_code == 200, made.text
    assert made.json()["changeId"] is None
    assert any("not in the change history" in w for w in made.json()["warnings"])
    assert mode(dashboard) == "time-slicing"
