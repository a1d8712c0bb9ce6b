"""The GPU slot page in headless Chromium against the demo: numbers, live changes, languages.

Every test also checks that the page logged no console error and that no request left
127.0.0.1 (air-gapped: no CDN, no font service).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import Stack

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

SERVER_1 = "gpu-server-1"
# The demo's 9 GPU nodes open compact (one line each); these tests read the node cards.
FULL_OVERVIEW = "/?view=full"
REFRESH_S = 0.5
# One page refresh plus an agent report and a snapshot rebuild, with room for a slow CI box.
LIVE_DEADLINE_MS = 8_000


@dataclass
class Watched:
    page: Any
    base_url: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        separator = "&" if "?" in path else "?"
        self.page.goto(f"{self.base_url}{path}{separator}refresh_s={REFRESH_S}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def watched(browser: Any, demo_stack: Stack) -> Iterator[Watched]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        locale="en-US",
        extra_http_headers={"Accept-Language": "en-US,en;q=0.9"},
    )
    context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=demo_stack.dashboard_url
    )
    page = context.new_page()
    page.set_default_timeout(LIVE_DEADLINE_MS)
    seen = Watched(page=page, base_url=demo_stack.dashboard_url)
    page.on("request", lambda request: seen.requests.append(request.url))
    page.on(
        "console",
        lambda message: (
            seen.console_errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: seen.console_errors.append(str(error)))
    yield seen
    context.close()
    assert seen.console_errors == []
    outside = [url for url in seen.requests if not url.startswith("http://127.0.0.1:")]
    assert outside == [], f"requests left 127.0.0.1: {outside}"


def node_of(stack: Stack, name: str) -> dict[str, Any]:
    response = stack.client.get(f"/api/v1/nodes/{name}")
    response.raise_for_status()
    node: dict[str, Any] = response.json()["node"]
    return node


def gpu_uuid(stack: Stack, node: str, index: int) -> str:
    uuid: str = next(gpu["uuid"] for gpu in node_of(stack, node)["gpus"] if gpu["index"] == index)
    return uuid


def test_overview_shows_the_demo_totals(watched: Watched, demo_stack: Stack) -> None:
    watched.open(FULL_OVERVIEW)
    page = watched.page
    expect(page.get_by_test_id(f"node-{SERVER_1}")).to_be_visible()
    totals = demo_stack.summary()["totals"]
    assert isinstance(totals, dict)
    for field_name in ("physical_gpus", "visible_gpus", "host_gpus", "allocatable"):
        figure = page.get_by_test_id(f"total-{field_name}").locator("dd").first
        expect(figure).to_have_text(str(totals[field_name]))
    expect(page.get_by_test_id("plugin-mode")).to_have_attribute("data-mode", "basic")


def test_overview_draws_host_gpus_apart_from_advertised(watched: Watched) -> None:
    watched.open(FULL_OVERVIEW)
    page = watched.page
    host = page.get_by_test_id(f"host-gpus-{SERVER_1}")
    advertised = page.get_by_test_id(f"advertised-gpus-{SERVER_1}")
    expect(host.locator('[data-testid^="gpu-GPU-"]')).to_have_count(2)
    expect(advertised.locator('[data-testid^="gpu-GPU-"]')).to_have_count(2)
    expect(host.get_by_test_id("slot-cell")).to_have_count(0)
    expect(advertised.get_by_test_id("slot-cell")).to_have_count(2)
    expect(host).to_contain_text("Kept for the host")
    # to_have_css retries: a live refresh may swap the card between lookup and reading.
    expect(host).to_have_css("border-top-style", "dashed")
    expect(advertised).to_have_css("border-top-style", "solid")


def test_host_process_on_advertised_gpu_turns_marker_red_without_reload(
    watched: Watched, demo_stack: Stack
) -> None:
    uuid = gpu_uuid(demo_stack, SERVER_1, 3)
    watched.open(FULL_OVERVIEW)
    page = watched.page
    marker = page.get_by_test_id(f"gpu-marker-{uuid}")
    expect(marker).to_have_attribute("data-severity", "none")
    page.evaluate("window.__sameDocument = true")
    pid = demo_stack.simulator.start_process(
        SERVER_1, 3, used_memory_mib=78_000, user="mallory", command="python rogue.py"
    )
    try:
        expect(marker).to_have_attribute("data-severity", "error", timeout=LIVE_DEADLINE_MS)
        assert page.evaluate("window.__sameDocument") is True
    finally:
        demo_stack.simulator.stop_process(SERVER_1, pid)
    expect(marker).to_have_attribute("data-severity", "none", timeout=LIVE_DEADLINE_MS)


def test_created_pod_appears_without_reload(watched: Watched, demo_stack: Stack) -> None:
    watched.open(FULL_OVERVIEW)
    page = watched.page
    card = page.get_by_test_id(f"node-{SERVER_1}")
    requested = page.get_by_test_id(f"node-requested-{SERVER_1}").locator("dd")
    before = int(requested.inner_text())
    expect(card).not_to_contain_text("ml/browser-test-0")
    page.evaluate("window.__sameDocument = true")
    demo_stack.simulator.create_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "browser-test-0", "namespace": "ml"},
            "spec": {
                "nodeName": SERVER_1,
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
            },
        }
    )
    try:
        # Until a GPU is tied to it, the pod is named on its node (slot cells when it is).
        expect(card).to_contain_text("ml/browser-test-0", timeout=LIVE_DEADLINE_MS)
        expect(requested).to_have_text(str(before + 1))
        assert page.evaluate("window.__sameDocument") is True
    finally:
        demo_stack.simulator.delete_pod("ml", "browser-test-0")


def test_language_switch_renders_korean_and_english(watched: Watched) -> None:
    watched.open(FULL_OVERVIEW)
    page = watched.page
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("heading", name="Cluster totals")).to_be_visible()
    page.get_by_test_id("lang-ko").click()
    expect(page.locator("html")).to_have_attribute("lang", "ko")
    expect(page.get_by_role("heading", name="클러스터 합계")).to_be_visible()
    expect(page.get_by_test_id(f"host-gpus-{SERVER_1}")).to_contain_text("호스트용으로 남김")
    page.get_by_test_id("lang-en").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")


def test_node_detail_lists_host_and_pod_processes(watched: Watched) -> None:
    watched.open(FULL_OVERVIEW)
    page = watched.page
    page.get_by_role("link", name=f"Details of {SERVER_1}").click()
    expect(page).to_have_url(re.compile(f"/nodes/{SERVER_1}$"))
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Node {SERVER_1}")
    rows = page.get_by_test_id("process-row")
    expect(rows.filter(has_text="python train.py")).to_have_attribute("data-owner", "host")
    expect(rows.filter(has_text="jupyterlab")).to_have_attribute("data-owner", "pod")
    expect(page.get_by_test_id("pods")).to_contain_text("ml/notebook-0")


def test_findings_remedy_is_copyable_and_stays_open_across_refreshes(watched: Watched) -> None:
    watched.open("/findings?view=full")
    page = watched.page
    first = page.locator("li.finding details").first
    expect(first).to_have_attribute("open", "")
    first.locator("summary").click()
    expect(first).not_to_have_attribute("open", "")
    # After htmx swaps in a fresh fragment (new elements), the closed row is still closed.
    first.evaluate("details => { details.dataset.old = 'yes'; }")
    page.wait_for_function(
        "() => document.querySelector('li.finding details').dataset.old === undefined"
    )
    expect(first).not_to_have_attribute("open", "")
    # Copying with no refresh meanwhile: a swap puts a fresh "Copy" button in the flashed
    # one's place (a race the test lost now and then). A row's own remedy comes first; the
    # findings that follow from it are folded below it.
    page.goto(f"{watched.base_url}/findings?view=full&refresh_s=300")
    second = page.locator("[data-testid=finding-list] > li.finding").nth(1)
    remedy = second.get_by_test_id("remedy").first.inner_text()
    second.get_by_role("button", name="Copy").first.click()
    expect(second.locator("button.copy").first).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == remedy
    link = second.get_by_test_id("doc-link").first
    assert re.fullmatch(r"/docs/findings\?lang=en#[\w.-]+", link.get_attribute("href") or "")


def test_keyboard_reaches_skip_link_and_navigation(watched: Watched) -> None:
    watched.open("/")
    page = watched.page
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_be_visible()


def test_phone_width_has_no_horizontal_scroll(watched: Watched) -> None:
    page = watched.page
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/", f"/nodes/{SERVER_1}", "/findings"):
        watched.open(path)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide at 390 px"


def test_dra_node_draws_its_devices_and_claims(watched: Watched, demo_stack: Stack) -> None:
    watched.open(FULL_OVERVIEW)
    page = watched.page
    node = page.get_by_test_id("node-gpu-dra-9")
    expect(node.get_by_test_id("allocation-gpu-dra-9")).to_have_text("Dynamic Resource Allocation")
    group = page.get_by_test_id("dra-gpus-gpu-dra-9")
    # GPU 0, two MIG devices of GPU 1, GPUs 2 and 3: five device cells, three claimed.
    expect(group.get_by_test_id("dra-device-cell")).to_have_count(5)
    expect(group.locator('[data-testid="dra-device-cell"][data-held="true"]')).to_have_count(3)
    expect(group.locator('[data-claim="ml/lab-shared-gpu"]')).to_contain_text(
        "(time-slicing): ml/lab-notebook-a, ml/lab-notebook-b"
    )
    expect(page.get_by_test_id("dra-total-allocated").locator("dd")).to_have_text("3")
    # The page refreshes itself: a retrying check survives a swap mid-read.
    expect(group).to_have_css("border-top-style", "solid")
