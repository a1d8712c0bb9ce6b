"""The change history page lists the changes kept in the cluster, newest first."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import ADMIN_TOKEN, Stack


def test_changes_page_lists_an_applied_mode_change_and_its_rollback(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("host-split")
    empty = stack.client.get("/admin/changes?lang=en")
    assert empty.status_code == 200 and 'data-testid="changes-none"' in empty.text
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    changed = stack.client.put(
        "/api/v1/plugin/config",
        json={"mode": "time-slicing", "replicas": 4},
        params={"force": "true"},
        headers=auth,
    )
    assert changed.status_code == 200, changed.text
    rolled = stack.client.post(
        "/api/v1/plugin/config/rollback", params={"force": "true"}, headers=auth
    )
    assert rolled.status_code == 200, rolled.text
    page = stack.client.get("/admin/changes?lang=ko").text
    rows = page.split('data-testid="change-row"')[1:]
    assert len(rows) == 2
    assert [row.split('data-action="', 1)[1].split('"', 1)[0] for row in rows] == [
        "rollback",
        "change",
    ]
    assert "되돌리기" in rows[0] and "변경" in rows[1]
    # The summary is worded from the record's settings in the page's language.
    assert "기본 (nvidia.com/gpu) → 시분할 \u00d74 (nvidia.com/gpu)" in rows[1]
    assert "admin@" in rows[1] and "(bearer)" in rows[1]
    english = stack.client.get("/admin/changes?lang=en").text
    assert "Basic (nvidia.com/gpu) → Time-slicing \u00d74 (nvidia.com/gpu)" in english
