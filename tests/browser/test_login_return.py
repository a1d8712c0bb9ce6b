"""Issue 44 in headless Chromium: a newcomer on any page finds "Log in" in the navigation
(English at 1400 px, Korean at 400 px), pastes the token, and is back on that page."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import ADMIN_TOKEN, Stack

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect


@pytest.mark.parametrize(("lang", "width", "page"), [("en", 1400, "/usage"), ("ko", 400, "/fit")])
def test_log_in_from_the_navigation_and_come_back(
    make_stack: Any, lang: str, width: int, page: str
) -> None:
    stack: Stack = make_stack("host-split", agents=False)
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        tab = browser.new_context(
            locale="ko-KR" if lang == "ko" else "en-US", viewport={"width": width, "height": 900}
        ).new_page()
        tab.set_default_timeout(15_000)
        tab.goto(f"{stack.dashboard_url}{page}?lang={lang}")
        login = tab.get_by_role("link", name="로그인" if lang == "ko" else "Log in", exact=True)
        expect(login).to_be_visible()
        box = login.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width  # on screen, no scrolling
        login.click()
        tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
        tab.get_by_test_id("login-button").click()
        expect(tab.get_by_test_id("signed-in")).to_be_visible()
        assert tab.url.startswith(f"{stack.dashboard_url}{page}"), tab.url
        expect(tab.get_by_test_id("nav-login")).to_have_count(0)
        browser.close()
