"""Issue 28 in headless Chromium: undo paths ask to confirm host processes, and a rollout
held by a failing plugin pod is let past it from the preview, without kubectl."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.simulator.plugin.rollout import RolloutPace
from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for
from tests.web.test_demo_page_done_when import PACE_S, _start, _stop

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

NODE = "gpu-server-1"
EDITOR = f"/admin/nodes/{NODE}/gpus"
DEADLINE_MS = 15_000


def _allocatable(stack: Stack) -> int | None:
    body: dict[str, Any] = stack.client.get(f"/api/v1/nodes/{NODE}").json()["node"]
    return body["allocatable"]


@pytest.fixture
def browser_tab() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        tab = browser.new_context(locale="en-US").new_page()
        tab.set_default_timeout(DEADLINE_MS)
        yield tab
        browser.close()


def _log_in(tab: Any, stack: Stack, path: str) -> None:
    tab.goto(f"{stack.dashboard_url}/login?next={path}")
    tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
    tab.get_by_test_id("login-button").click()


def _keep_gpu_2_for_a_host_process(tab: Any, stack: Stack) -> None:
    """Split: GPU 3 alone to Kubernetes; then carol starts a process on GPU 2 (host)."""
    _log_in(tab, stack, EDITOR)
    for index in (0, 1, 2):
        tab.get_by_test_id(f"gpu-{index}-host").check()
    tab.get_by_test_id("gpu-3-kubernetes").check()
    tab.get_by_test_id("preview-button").click()
    tab.get_by_test_id("apply-button").click()
    expect(tab.get_by_test_id("applied")).to_be_visible()
    wait_for(lambda: _allocatable(stack) == 1, what="GPU 3 alone advertised")
    stack.simulator.start_process(NODE, 2, used_memory_mib=2048, user="carol", command="eval.py")
    wait_for(
        lambda: "eval.py" in stack.client.get(f"/api/v1/nodes/{NODE}/gpu-split").text,
        what="carol's process in the agent report",
    )
    tab.goto(f"{stack.dashboard_url}{EDITOR}")


def _open_preview(tab: Any, stack: Stack, start: str) -> None:
    """The return's preview from the editor, or the undo's from the change list."""
    if start == "undo-button":
        tab.goto(f"{stack.dashboard_url}/admin/changes")
        row = tab.locator("[data-testid=change-row][data-kind=split]").first
        row.get_by_test_id(start).click()
    else:
        tab.get_by_test_id(start).first.click()


def _refused_then_confirmed(tab: Any, stack: Stack, start: str) -> None:
    """The preview warns; apply without the box is refused, saying it once; with it, applied."""
    _open_preview(tab, stack, start)
    expect(tab.get_by_test_id("host-processes")).to_contain_text("eval.py")
    tab.get_by_test_id("apply-button").click()
    alert = tab.get_by_test_id("admin-error")
    expect(alert).to_contain_text("Host processes run on GPUs")
    assert alert.inner_text().count("eval.py") == 1
    assert alert.inner_text().count("Host processes run on GPUs") == 1
    assert _allocatable(stack) == 1  # nothing written

    _open_preview(tab, stack, start)
    tab.get_by_test_id("apply-confirm").check()
    tab.get_by_test_id("apply-button").click()
    expect(tab.get_by_test_id("applied")).to_be_visible()
    wait_for(lambda: _allocatable(stack) == 2, what="the shared DaemonSet's 2 slots again")


def test_return_to_shared_asks_to_confirm_host_processes_in_the_form(
    make_stack: Any, browser_tab: Any
) -> None:
    stack = make_stack("host-split")
    wait_for(lambda: _allocatable(stack) == 2, what="the node's 2 slots")
    _keep_gpu_2_for_a_host_process(browser_tab, stack)
    _refused_then_confirmed(browser_tab, stack, "return-button")


def test_split_undo_from_the_change_list_asks_to_confirm_host_processes(
    make_stack: Any, browser_tab: Any
) -> None:
    stack = make_stack("host-split")
    wait_for(lambda: _allocatable(stack) == 2, what="the node's 2 slots")
    _keep_gpu_2_for_a_host_process(browser_tab, stack)
    _refused_then_confirmed(browser_tab, stack, "undo-button")


@pytest.fixture
def paced_demo() -> Iterator[Stack]:
    stack = _start(pace=RolloutPace(terminating_s=PACE_S, creating_s=PACE_S))
    yield stack
    _stop(stack)


def test_passing_the_failing_node_brings_the_rollout_to_done_in_the_browser(
    paced_demo: Stack, browser_tab: Any
) -> None:
    tab, stack = browser_tab, paced_demo
    _log_in(tab, stack, "/admin/plugin")
    tab.get_by_test_id("mode-time-slicing").check()
    tab.get_by_test_id("replicas").fill("4")
    tab.get_by_test_id("preview-button").click()
    warning = tab.get_by_test_id("failing-nodes")
    expect(warning).to_contain_text("gpu-ws-5")
    expect(warning).to_have_attribute("data-holds", "true")
    tab.get_by_test_id("pass-failing-nodes").check()
    tab.get_by_test_id("apply-button").click()

    rollout = tab.get_by_test_id("rollout")
    expect(rollout).to_have_attribute("data-state", "done", timeout=30_000)
    budget = tab.get_by_test_id("rollout-budget")
    expect(budget).to_have_attribute("data-restored", "true", timeout=30_000)
    expect(budget).to_contain_text("put back to 1")
    row = tab.get_by_test_id("rollout-gpu-ws-5")
    expect(row).to_contain_text("already failing before the change")
    ds = stack.simulator.get("DaemonSet", "nvidia-device-plugin-daemonset", "kube-system")
    assert ds is not None
    assert ds["spec"]["updateStrategy"].get("rollingUpdate", {}).get("maxUnavailable", 1) == 1
    record = stack.client.get("/api/v1/plugin/rollout").json()["max_unavailable"]
    assert (record["from"], record["to"]) == (1, 2) and record["restoredAt"]
