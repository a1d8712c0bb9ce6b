"""The admin's whole form flow in headless Chromium on the host-split scenario.

Log in, switch basic -> time-slicing x4, the preview shows 2 -> 8 slots, apply, the rollout
view follows until the node advertises 8; undo it from the change list (back to 2); the
Events record both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import ADMIN_TOKEN, Stack
from tests.web.test_admin_api import gpu_slots_events

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

NODE = "gpu-server-1"
DEADLINE_MS = 10_000


@pytest.fixture
def page(make_stack: Callable[..., Stack]) -> Iterator[tuple[Any, Stack, list[str]]]:
    stack = make_stack("host-split")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(locale="en-US")
        tab = context.new_page()
        tab.set_default_timeout(DEADLINE_MS)
        errors: list[str] = []
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        yield tab, stack, errors
        browser.close()


def test_admin_flow_switch_preview_apply_rollout_and_rollback(
    page: tuple[Any, Stack, list[str]],
) -> None:
    tab, stack, errors = page
    tab.goto(f"{stack.dashboard_url}/admin/plugin")
    tab.get_by_test_id("login-link").click()
    tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
    tab.get_by_test_id("login-button").click()
    expect(tab.get_by_test_id("current-mode")).to_have_attribute("data-mode", "basic")

    tab.get_by_test_id("mode-time-slicing").check()
    tab.get_by_test_id("replicas").fill("4")
    tab.get_by_test_id("preview-button").click()

    row = tab.get_by_test_id(f"slots-{NODE}")
    expect(row.get_by_test_id("slots-before")).to_contain_text("2")
    expect(row.get_by_test_id("slots-after")).to_contain_text("8")
    expect(tab.get_by_test_id("dry-run-ok")).to_be_visible()
    expect(tab.get_by_test_id("totals-before-after")).to_have_attribute("data-after", "8")
    expect(tab.get_by_test_id("signed-in")).to_be_visible()
    expect(tab.get_by_test_id("diff-daemonset")).to_contain_text("CONFIG_FILE")

    tab.get_by_test_id("apply-button").click()
    expect(tab.get_by_test_id("rollout-done")).to_be_visible()
    expect(tab.get_by_test_id(f"rollout-{NODE}").get_by_test_id("advertised")).to_contain_text("8")

    tab.get_by_test_id("back-to-form").click()
    current = tab.get_by_test_id("current-mode")
    expect(current).to_have_attribute("data-mode", "time-slicing")
    expect(current).to_have_attribute("data-replicas", "4")
    expect(tab.get_by_test_id("previous-config")).to_have_attribute("data-mode", "basic")
    tab.get_by_test_id("undo-link").click()  # undo lives with the change list
    newest = tab.get_by_test_id("change-row").first
    expect(newest).to_have_attribute("data-outcome", "done")
    newest.get_by_test_id("undo-button").click()
    expect(tab.get_by_test_id("totals-before-after")).to_have_attribute("data-after", "2")
    expect(tab.get_by_test_id("apply-form").locator("button[type=submit]")).to_have_count(1)
    tab.get_by_test_id("rollback-confirm").click()
    expect(tab.get_by_test_id("rollout-done")).to_be_visible()
    expect(tab.get_by_test_id(f"rollout-{NODE}").get_by_test_id("advertised")).to_contain_text("2")

    reasons = sorted(e.reason for e in gpu_slots_events(stack))
    assert reasons == ["GpuSlotsConfigChanged", "GpuSlotsConfigRolledBack"]
    assert errors == []
