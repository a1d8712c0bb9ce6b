"""Issue 44 (items 6 and 9) in headless Chromium, on the demo as a newcomer walks it.

gpu-ws-5's failing plugin is one error, its cause, with what follows from it folded beneath
(linked both ways) and its pod's state said the same way as the node's badge. The overview
(9 GPU nodes) and the findings page (more than 10 findings) open compact, one line a node or
finding, each opening in place; the pages are a fraction of their full height; a choice of
view outlives a reload. English at 1400 px, Korean at 400 px.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import Stack
from tests.live import wait_for
from tests.web.test_demo_page_done_when import _all_reported, _start, _stop

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

DEADLINE_MS = 20_000
VIEWS = [("en", 1400), ("ko", 400)]
# Page heights (px) the compact views stay under on the demo; the full views of the same
# pages are measured above them in the same test (issue 44: 6,045 px overview at desktop
# width, 14,585 px on a phone; findings about 500 px each). Measured with 14 findings:
# overview compact 2,566 / full 6,348 px at 1400 (ko 400: 4,749 / 14,947), findings
# compact 903 / full 6,131 px (ko 400: 1,619 / 9,407); the bounds leave room for 18.
COMPACT_OVERVIEW_MAX_PX = {1400: 3_200, 400: 6_500}
COMPACT_FINDINGS_MAX_PX = {1400: 1_500, 400: 2_800}
HEIGHT_JS = "() => document.documentElement.scrollHeight"


@pytest.fixture(scope="module")
def demo() -> Iterator[Stack]:
    # Idle slots flagged after 1 s: the demo shows its full set of findings (more than 10).
    stack = _start(idle_slot_after_s=1.0, low_utilization_after_s=2.0)
    wait_for(lambda: _all_reported(stack.client), what="every GPU node's agent report")
    wait_for(
        lambda: stack.client.get("/api/v1/findings").json()["total"] > 10,
        timeout_s=30,
        what="more than 10 findings",
    )
    yield stack
    _stop(stack)


@pytest.fixture
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def _tab(browser: Any, lang: str, width: int) -> Any:
    context = browser.new_context(
        locale="ko-KR" if lang == "ko" else "en-US", viewport={"width": width, "height": 900}
    )
    tab = context.new_page()
    tab.set_default_timeout(DEADLINE_MS)
    return tab


def _open(tab: Any, stack: Stack, path: str, lang: str) -> None:
    separator = "&" if "?" in path else "?"
    tab.goto(f"{stack.dashboard_url}{path}{separator}lang={lang}&refresh_s=300")


def _height(tab: Any) -> int:
    return int(tab.evaluate(HEIGHT_JS))


@pytest.mark.parametrize(("lang", "width"), VIEWS)
def test_gpu_ws_5_is_one_error_with_its_consequences_folded(
    demo: Stack, browser: Any, lang: str, width: int
) -> None:
    tab = _tab(browser, lang, width)
    _open(tab, demo, "/findings?node=gpu-ws-5", lang)
    rows = tab.locator("[data-testid=finding-list] > li")
    expect(rows).to_have_count(1)  # one error: the cause
    root = rows.first
    expect(root).to_have_attribute("data-testid", "finding-visible-device-not-on-node")
    expect(root.get_by_test_id("consequence-count")).to_be_visible()
    nested = root.locator("[data-testid=consequences] li.finding")
    codes = {nested.nth(i).get_attribute("data-testid") for i in range(nested.count())}
    assert codes == {"finding-plugin-pod-not-ready", "finding-fail-on-init-silent-zero"}

    for i in range(nested.count()):  # folded to their title lines beneath the cause
        item = nested.nth(i)
        expect(item.get_by_test_id("finding-title")).to_be_visible()
        expect(item.get_by_test_id("finding-title")).to_contain_text("CrashLoopBackOff")
        expect(item.get_by_test_id("finding-title")).not_to_contain_text("Running")
        expect(item.locator(".remedy")).to_be_hidden()
    nested.first.locator("summary").click()
    nested.first.get_by_test_id("cause-link").click()  # names its cause and links to it
    root_id = root.locator("details").first.get_attribute("id")
    assert tab.evaluate("() => location.hash") == f"#{root_id}"

    # Among every finding (compact): one line for the cause, its stories folded inside it.
    _open(tab, demo, "/findings", lang)
    top = tab.locator("[data-testid=finding-list] > li")
    expect(top.and_(tab.get_by_test_id("finding-visible-device-not-on-node"))).to_have_count(1)
    expect(top.and_(tab.get_by_test_id("finding-plugin-pod-not-ready"))).to_have_count(0)
    root = top.and_(tab.get_by_test_id("finding-visible-device-not-on-node"))
    folded = root.locator("[data-testid=consequences] li.finding")
    expect(folded.first).to_be_hidden()  # the error alone until opened
    root.locator("summary").first.click()
    expect(folded.first).to_be_visible()

    # The node's badge tells the pod's state the same way.
    _open(tab, demo, "/?view=full", lang)
    badge = tab.get_by_test_id("plugin-state-gpu-ws-5")
    expect(badge).to_have_attribute("data-state", "CrashLoopBackOff")
    worst = tab.get_by_test_id("worst-gpu-ws-5")
    expect(worst).to_contain_text("NVIDIA_VISIBLE_DEVICES")  # the cause, not a consequence
    tab.context.close()


@pytest.mark.parametrize(("lang", "width"), VIEWS)
def test_long_pages_open_compact_and_remember_the_choice(
    demo: Stack, browser: Any, lang: str, width: int
) -> None:
    tab = _tab(browser, lang, width)

    _open(tab, demo, "/", lang)
    switch = tab.get_by_test_id("view-switch")
    expect(switch).to_have_attribute("data-view", "compact")  # 9 GPU nodes: more than 8
    lines = tab.locator("[data-testid=node-lines] > li")
    expect(lines).to_have_count(9)
    compact = _height(tab)
    assert compact < COMPACT_OVERVIEW_MAX_PX[width], compact
    expect(tab.get_by_test_id("node-gpu-ws-5")).to_be_hidden()
    tab.goto(f"{demo.dashboard_url}/?lang={lang}&refresh_s=0.5")  # a live page
    line = tab.get_by_test_id("node-line-gpu-ws-5")
    line.locator("summary").click()  # opens in place
    expect(tab.get_by_test_id("node-gpu-ws-5")).to_be_visible()
    line.evaluate("details => { details.dataset.old = 'yes'; }")
    tab.wait_for_function(  # a refresh swapped in new elements: the line is still open
        "() => document.getElementById('nodeline-gpu-ws-5').dataset.old === undefined"
    )
    expect(line).to_have_attribute("open", "")

    tab.get_by_test_id("view-full").click()
    expect(tab.get_by_test_id("view-switch")).to_have_attribute("data-view", "full")
    full = _height(tab)
    assert full > COMPACT_OVERVIEW_MAX_PX[width], full  # the bound fails the full page
    _open(tab, demo, "/", lang)  # no parameter: the cookie keeps the choice
    expect(tab.get_by_test_id("view-switch")).to_have_attribute("data-view", "full")
    tab.get_by_test_id("view-compact").click()
    tab.reload()
    expect(tab.get_by_test_id("view-switch")).to_have_attribute("data-view", "compact")

    _open(tab, demo, "/findings", lang)
    expect(tab.get_by_test_id("finding-list")).to_have_attribute("data-view", "compact")
    first = tab.locator("[data-testid=finding-list] > li").first
    expect(first.locator(".remedy").first).to_be_hidden()  # one line each until opened
    compact = _height(tab)
    assert compact < COMPACT_FINDINGS_MAX_PX[width], compact
    first.locator("summary").first.click()
    expect(first.locator(".remedy").first).to_be_visible()

    tab.get_by_test_id("view-full").click()
    expect(tab.get_by_test_id("finding-list")).to_have_attribute("data-view", "full")
    full = _height(tab)
    assert full > COMPACT_FINDINGS_MAX_PX[width], full
    _open(tab, demo, "/findings", lang)
    expect(tab.get_by_test_id("finding-list")).to_have_attribute("data-view", "full")
    _open(tab, demo, "/", lang)  # each page keeps its own choice
    expect(tab.get_by_test_id("view-switch")).to_have_attribute("data-view", "compact")
    tab.context.close()
