"""One undo per mode change: the plugin's own undo is the change list's, of the newest one.

`POST /api/v1/plugin/config/rollback` and the plugin page's Undo undo the newest mode change
through the change history's rollback (`POST /api/v1/changes/{id}/rollback`, the change
list's Undo): the same preview and token, the same writes, the same record naming the change
undone. The previous-config annotation earlier versions kept on the DaemonSet is neither
read nor written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest

from tests.conftest import Stack
from tests.live import wait_for
from tests.web.test_admin_api import (
    BEARER,
    TO_TS4,
    admin,
    config,
    gpu_slots_events,
    node_slots,
    put,
)
from tests.web.test_admin_pages_i18n import csrf_of, log_in

__all__ = ["admin"]  # the fixture

PLUGIN_ROLLBACK = "/api/v1/plugin/config/rollback"
DRY = {"dryRun": "true"}
# what differs between two applies of the same change: when, which objects' versions, which id
OF_THE_MOMENT = {"appliedAt", "generation", "resourceVersions", "changeId"}


def lasting(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without what differs between two calls of the same change."""
    return {k: v for k, v in answer.items() if k not in OF_THE_MOMENT}


def changes(stack: Stack) -> list[dict[str, Any]]:
    body: list[dict[str, Any]] = stack.client.get("/api/v1/changes").json()["changes"]
    return body


def switched_to_ts4(stack: Stack) -> str:
    """Apply time-slicing x4 and wait for its rollout; the id of its change record."""
    assert put(stack, TO_TS4).status_code == 200
    wait_for(lambda: node_slots(stack) == (8, "nvidia.com/gpu"), what="8 slots after rollout")
    wait_for(lambda: stack.client.get("/api/v1/plugin/rollout").json()["done"], what="done")
    newest = changes(stack)[0]
    assert (newest["kind"], newest["action"]) == ("mode", "change")
    return str(newest["id"])


def rollback(stack: Stack, path: str, *, dry_run: bool, token: str | None = None) -> Any:
    body = {"expectedToken": token} if token else None
    response = stack.client.post(path, params=DRY if dry_run else {}, json=body, headers=BEARER)
    assert response.status_code == 200, response.text
    return response.json()


def test_plugin_rollback_previews_and_applies_as_the_history_rollback_of_the_newest(
    admin: Stack,
) -> None:
    first = switched_to_ts4(admin)
    by_id = f"/api/v1/changes/{first}/rollback"
    shown = rollback(admin, PLUGIN_ROLLBACK, dry_run=True)
    listed = rollback(admin, by_id, dry_run=True)
    # the same preview, token and all (a controller's status write between the two calls
    # may move the resourceVersions, never the token)
    assert lasting(shown) == lasting(listed) and shown["token"] == listed["token"]
    assert (shown["kind"], shown["after"]["mode"]) == ("rollback", "basic")
    assert config(admin)["previous"] == changes(admin)[0]["before"]  # what it restores

    by_plugin = rollback(admin, PLUGIN_ROLLBACK, dry_run=False, token=shown["token"])
    wait_for(lambda: node_slots(admin) == (2, "nvidia.com/gpu"), what="2 slots after the undo")
    undo = changes(admin)[0]
    assert (undo["action"], undo["rollsBack"]) == ("rollback", first)

    second = switched_to_ts4(admin)  # the same change again, undone from the history this time
    again = rollback(admin, f"/api/v1/changes/{second}/rollback", dry_run=True)
    by_history = rollback(
        admin, f"/api/v1/changes/{second}/rollback", dry_run=False, token=again["token"]
    )
    wait_for(lambda: node_slots(admin) == (2, "nvidia.com/gpu"), what="2 slots after the undo")

    assert lasting(by_plugin) == lasting(by_history)
    records = changes(admin)
    assert records[0]["rollsBack"] == second
    assert {k: records[0][k] for k in ("before", "after", "summary")} == {
        k: undo[k] for k in ("before", "after", "summary")
    }
    reasons = [e.reason for e in gpu_slots_events(admin)]
    assert reasons.count("GpuSlotsConfigRolledBack") == 2


def test_plugin_rollback_after_a_rollback_redoes_the_change(admin: Stack) -> None:
    switched_to_ts4(admin)
    blind = admin.client.post(PLUGIN_ROLLBACK, params={"force": "true"}, headers=BEARER)
    assert blind.status_code == 200, blind.text
    wait_for(lambda: node_slots(admin) == (2, "nvidia.com/gpu"), what="2 slots after the undo")
    assert config(admin)["previous"]["mode"] == "time-slicing"  # the undo is now the newest

    again = admin.client.post(PLUGIN_ROLLBACK, params={"force": "true"}, headers=BEARER)

    assert again.status_code == 200, again.text
    wait_for(lambda: node_slots(admin) == (8, "nvidia.com/gpu"), what="8 slots again")
    newest, undone = changes(admin)[:2]
    assert (newest["action"], newest["rollsBack"]) == ("rollback", undone["id"])
    assert undone["action"] == "rollback"  # a second rollback undoes the first


def _undo_form(html: str) -> str:
    """The action of the page's Undo form (the plugin page's, or the change list's first)."""
    match = re.search(r'<form method="post" action="([^"]+)" data-testid="undo-form"', html)
    assert match, "the page offers an Undo"
    return unescape(match.group(1))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_plugin_page_undo_is_the_change_lists_undo_of_the_newest_mode_change(
    make_stack: Callable[..., Stack], lang: str
) -> None:
    stack = make_stack("host-split")
    wait_for(lambda: node_slots(stack) == (2, "nvidia.com/gpu"), what="2 slots")
    log_in(stack)
    assert 'data-testid="plugin-undo"' not in stack.client.get("/admin/plugin").text
    newest = switched_to_ts4(stack)

    page = stack.client.get(f"/admin/plugin?lang={lang}").text
    action = _undo_form(page)
    listed = _undo_form(stack.client.get(f"/admin/changes?lang={lang}").text)
    assert action == listed == f"/admin/changes/{newest}/mode-rollback/preview?lang={lang}"
    assert f'data-change="{newest}"' in page
    assert 'data-testid="previous-config" data-mode="basic"' in page  # what it restores

    preview = stack.client.post(action, data={"csrf_token": csrf_of(page)})
    assert preview.status_code == 200, preview.text
    token = re.search(r'name="token" value="([^"]+)"', preview.text)
    assert token is not None
    assert unescape(token.group(1)) == rollback(stack, PLUGIN_ROLLBACK, dry_run=True)["token"]

    confirm = stack.client.post(
        action.replace("/preview", ""),
        data={"csrf_token": csrf_of(preview.text), "token": unescape(token.group(1))},
        follow_redirects=False,
    )
    assert confirm.status_code in (200, 303), confirm.text  # to the rollout (its warnings)
    wait_for(lambda: node_slots(stack) == (2, "nvidia.com/gpu"), what="2 slots after the undo")
    assert changes(stack)[0]["rollsBack"] == newest
    after = stack.client.get(f"/admin/plugin?lang={lang}").text
    assert 'data-testid="plugin-undo"' in after  # what the undo restored, named
    assert 'data-testid="undo-form"' not in after  # an undo is not undone in one click
