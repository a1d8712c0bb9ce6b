"""The page /fit in headless Chromium against the demo: reached from the navigation, the
short form and a pasted manifest answered with verdicts and reasons, in English and Korean.

No request leaves 127.0.0.1 and the page logs no console error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import Stack

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

DEADLINE_MS = 8_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@dataclass
class Seen:
    errors: list[str] = field(default_factory=list)  # console errors a test did not expect
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def page(browser: Any, demo_stack: Stack, seen: Seen) -> Iterator[Any]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        locale="en-US",
        extra_http_headers={"Accept-Language": "en-US,en;q=0.9"},
    )
    page = context.new_page()
    page.set_default_timeout(DEADLINE_MS)
    page.on("request", lambda request: seen.requests.append(request.url))
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: seen.errors.append(str(error)))
    page.goto(f"{demo_stack.dashboard_url}/?refresh_s=300")
    yield page
    context.close()
    assert seen.errors == []
    assert [url for url in seen.requests if not url.startswith("http://127.0.0.1:")] == []


def _row(page: Any, node: str) -> Any:
    return page.get_by_test_id("fit-row").and_(page.locator(f'[data-node="{node}"]'))


def test_fit_page_form_answers_from_the_navigation(page: Any) -> None:
    page.get_by_role("link", name="Will it fit?").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Will it fit?")
    page.get_by_label("GPU resource").select_option("nvidia.com/mig-3g.40gb")
    page.get_by_label("How many").fill("2")
    page.get_by_role("button", name="Check", exact=True).click()
    expect(page.get_by_role("heading", name="It fits now")).to_be_visible()
    mig = _row(page, "gpu-mig-8")
    expect(mig).to_have_attribute("data-fits", "true")
    expect(mig.get_by_test_id("fit-verdict")).to_have_text("yes")
    expect(_row(page, "gpu-server-1").get_by_test_id("fit-reasons")).to_have_text(
        "no MIG device of nvidia.com/mig-3g.40gb on this node"
    )
    # the rows that fit come first
    expect(page.get_by_test_id("fit-row").first).to_have_attribute("data-node", "gpu-mig-8")


def test_fit_page_pasted_manifest_answers_in_korean(page: Any, seen: Seen) -> None:
    page.get_by_test_id("lang-ko").click()
    page.get_by_test_id("nav-fit").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("배치 확인: 들어갈 자리가 있나요?")
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "big", "namespace": "ml"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "cuda",
                            "resources": {"limits": {"nvidia.com/gpu": "40"}},
                        }
                    ]
                }
            }
        },
    }
    page.get_by_test_id("fit-manifest").fill(yaml.safe_dump(manifest))
    page.get_by_test_id("fit-ask-manifest").click()
    expect(page.get_by_role("heading", name="지금은 들어갈 노드가 없습니다")).to_be_visible()
    expect(_row(page, "gpu-server-6").get_by_test_id("fit-reasons")).to_contain_text(
        "노드가 cordon 되어 있습니다"
    )
    expect(_row(page, "gpu-server-1").get_by_test_id("fit-reasons")).to_contain_text(
        "nvidia.com/gpu 부족: 40개 요청"
    )
    page.get_by_test_id("fit-manifest").fill("kind: Service\n")
    page.get_by_test_id("fit-ask-manifest").click()
    expect(page.get_by_role("alert")).to_contain_text("kind Service에는 확인할 파드가 없습니다")
    # the refused manifest is answered 422, which Chromium logs; nothing else may be logged
    assert seen.errors == [
        "Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"
    ]
    seen.errors.clear()
