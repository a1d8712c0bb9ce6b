"""Two admins apply the same mode-change preview at the same instant (issue 48).

The simulator's API server holds the two ConfigMap writes until both are in flight, so the
two applies race for real at the API server, after both passed the preview's freshness
check: one write wins, the other meets it (409: "already exists" for a create, "the object
has been modified" for a replace). The loser must be told what a split's loser is told, in
the same words: this change was not applied, nothing of it was written, which change won;
and nothing of it may be in the cluster, the history or the Events.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.kube.concurrent import CHANGE_ID_ANNOTATION
from tests.conftest import Stack
from tests.web.test_admin_api import BEARER, NS, TO_TS4, admin, gpu_slots_events, put
from tests.web.test_admin_pages_i18n import TS4, csrf_of, log_in
from tests.web.test_pages import parse

__all__ = ["admin"]  # the fixture

DS = "nvidia-device-plugin-daemonset"
CM = "nvidia-device-plugin-config"


def _twice_at_once(stack: Stack, apply: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """`apply` from two admins at once, their ConfigMap writes held until both are in flight."""
    verb = "update" if stack.simulator.get("ConfigMap", CM, NS) else "create"
    stack.simulator.faults.hold(verb=verb, kind="ConfigMap", count=2)
    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(apply())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(answers, key=lambda a: a.status_code)


def _changes(stack: Stack) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = stack.client.get("/api/v1/changes").json()["changes"]
    return found


def _written_by(stack: Stack, kind: str, name: str) -> str | None:
    obj = stack.simulator.get(kind, name, NS) or {}
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(CHANGE_ID_ANNOTATION)


@pytest.mark.parametrize(
    ("first", "then", "server_said"),
    [
        (None, TO_TS4, "already exists"),  # both create the ConfigMap
        (TO_TS4, {**TO_TS4, "replicas": 8}, "the object has been modified"),  # both replace it
    ],
)
def test_the_loser_of_two_applies_of_one_preview_is_told_which_change_won(
    admin: Stack, first: dict[str, Any] | None, then: dict[str, Any], server_said: str
) -> None:
    if first is not None:
        done = put(
            admin, {**first, "expectedToken": put(admin, first, dry_run=True).json()["token"]}
        )
        assert done.status_code == 200, done.text
    changes, events = len(_changes(admin)), len(gpu_slots_events(admin))

    preview = put(admin, then, dry_run=True)
    assert preview.status_code == 200, preview.text
    applied = {**then, "expectedToken": preview.json()["token"]}
    url = f"{admin.dashboard_url}/api/v1/plugin/config"

    won, lost = _twice_at_once(
        admin, lambda: httpx.put(url, json=applied, headers=BEARER, timeout=30)
    )

    assert (won.status_code, lost.status_code) == (200, 409), (won.text, lost.text)
    winner = won.json()["changeId"]
    detail = lost.json()["detail"]
    assert detail.startswith(
        f"ConfigMap {NS}/{CM} was changed at the same time by change {winner}: this change was "
        "not applied and nothing of it was written."
    ), detail
    assert server_said in detail  # the API server's own words, as the detail's detail
    # nothing of the loser: the objects are the winner's, one record, one Event
    assert _written_by(admin, "ConfigMap", CM) == _written_by(admin, "DaemonSet", DS) == winner
    assert [c["id"] for c in _changes(admin)][: len(_changes(admin)) - changes] == [winner]
    assert len(_changes(admin)) == changes + 1
    assert len(gpu_slots_events(admin)) == events + 1


def test_the_loser_on_the_admin_page_reads_it_in_korean(admin: Stack) -> None:
    log_in(admin)
    csrf = csrf_of(admin.client.get("/admin/plugin").text)
    preview = admin.client.post("/admin/plugin/preview?lang=ko", data={**TS4, "csrf_token": csrf})
    assert preview.status_code == 200, preview.text
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', preview.text))

    won, lost = _twice_at_once(
        admin,
        lambda: admin.client.post("/admin/plugin/apply?lang=ko", data=form, follow_redirects=False),
    )

    assert (won.status_code, lost.status_code) == (303, 409), lost.text
    winner = _written_by(admin, "ConfigMap", CM)
    assert winner and _written_by(admin, "DaemonSet", DS) == winner
    page = parse(lost.text)
    assert page.text("admin-error").startswith(
        f"이 변경은 적용되지 않았습니다. 같은 때에 변경 {winner}이(가) 적용되었고"
    )
    assert page.text("admin-error-detail").startswith(f"ConfigMap {NS}/{CM} was changed")
