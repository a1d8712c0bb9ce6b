"""/usage/history in headless Chromium: SVG charts drawn by the server, the showback table
and its CSV, English and Korean, a phone's width, nothing fetched from elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import Stack
from tests.live import wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect


@pytest.fixture
def stack(make_stack: Callable[..., Stack], tmp_path: Path) -> Stack:
    """The demo sampled every second into a file; a few samples held before the page."""
    stack = make_stack("demo", history_interval_s=1, history_path=tmp_path / "h.sqlite")

    def sampled() -> bool:
        body = stack.client.get("/api/v1/showback", params={"by": "owner"}).json()
        return body["totals"]["gpuHours"] > 0

    wait_for(sampled, timeout_s=30, interval_s=0.5, what="GPU-hours in the history")
    return stack


@pytest.fixture
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.mark.parametrize(
    ("lang", "width", "heading", "showback"),
    [
        ("en", 1400, "GPU-hours over days", "Showback"),
        ("ko", 400, "기간별 GPU 시간", "사용량 배분"),
    ],
)
def test_history_page_draws_charts_and_the_showback(
    browser: Any, stack: Stack, lang: str, width: int, heading: str, showback: str
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{stack.dashboard_url}/usage/history?by=owner&lang={lang}")
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    chart = page.get_by_test_id("history-chart")
    expect(chart).to_be_visible()
    assert chart.get_attribute("role") == "img"
    assert chart.locator("rect.bar").count() >= 1  # the latest hour's column is drawn
    expect(page.get_by_role("heading", name=showback)).to_be_visible()
    rows = page.get_by_test_id("showback-row")
    assert rows.count() >= 2
    assert page.get_by_test_id("showback-bar").count() == rows.count()
    total = page.get_by_test_id("showback-total").inner_text()
    assert total not in ("", "0.00")
    with page.expect_download() as download:
        page.get_by_test_id("showback-csv").click()
    csv_text = Path(download.value.path()).read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].startswith("owner,gpuHours,usedGpuHours,idleHeldGpuHours")
    assert len(csv_text.splitlines()) == rows.count() + 1
    overflow = page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth")
    assert not overflow, "the page scrolls sideways"
    page.get_by_test_id("history-period").get_by_role("link").nth(1).click()
    expect(page).to_have_url(f"{stack.dashboard_url}/usage/history?period=7d&by=owner&lang={lang}")
    expect(page.get_by_test_id("history-chart")).to_be_visible()
    assert page.get_by_test_id("history-column").count() == 28
    context.close()
    assert errors == []
    outside = [url for url in requests if not url.startswith("http://127.0.0.1:")]
    assert outside == [], outside
