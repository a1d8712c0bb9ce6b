"""Layout at phone, laptop and wide widths: no word broken inside a label, tables scroll.

For every label-like element (figure names, table headers, pills, buttons, navigation,
filter labels) each word must sit on one line: a Range over the word gives client
rectangles on a single line (names in `code` are data and may wrap). In English and
Korean, at 390, 1280 and 1920 px.
"""

from __future__ import annotations

from collections.abc import Iterator
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

LABELS = (
    "dt, th, .pill, .badge, button, .button, .site-nav a, .tabs a, .filters label span,"
    " .group-title"
)

# Returns the words whose glyphs land on more than one line.
BROKEN_WORDS_JS = """
(selector) => {
  const broken = [];
  for (const element of document.querySelectorAll(selector)) {
    if (!element.offsetParent && element.tagName !== 'BODY') continue;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      if (node.parentElement.closest('code')) continue;  // names are data: they may wrap
      const text = node.textContent;
      const re = /\\S+/g;
      let match;
      while ((match = re.exec(text))) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set();
        for (const rect of range.getClientRects()) {
          if (rect.width > 0) tops.add(Math.round(rect.top));
        }
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}
"""

# Table cells narrower than two characters: a table squeezed one letter per line.
SQUEEZED_CELLS_JS = """
() => Array.from(document.querySelectorAll('table.data td, table.data th'))
  .filter((cell) => cell.offsetParent && cell.textContent.trim().length > 3
    && cell.getBoundingClientRect().width < 24)
  .map((cell) => cell.textContent.trim())
"""

PAGES = ("/", "/nodes/gpu-server-1", "/findings?severity=error", "/usage", "/docs/findings")


@pytest.fixture(scope="module")
def browser(demo_stack: Stack) -> Iterator[Any]:
    wait_for(
        lambda: all(
            n["agent"] is not None
            for n in demo_stack.client.get("/api/v1/nodes").json()["nodes"]
            if n["gpu_node"]
        ),
        timeout_s=20,
        what="agent reports",
    )
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.mark.parametrize("width", [390, 1280, 1920])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_no_word_breaks_inside_labels(
    browser: Any, demo_stack: Stack, width: int, lang: str
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        for path in PAGES:
            separator = "&" if "?" in path else "?"
            page.goto(f"{demo_stack.dashboard_url}{path}{separator}lang={lang}")
            page.wait_for_selector("main h1")
            broken = page.evaluate(BROKEN_WORDS_JS, LABELS)
            assert broken == [], (path, width, lang, broken)
            squeezed = page.evaluate(SQUEEZED_CELLS_JS)
            assert squeezed == [], (path, width, lang, squeezed)
    finally:
        context.close()


def test_phone_tables_scroll_inside_their_frame(browser: Any, demo_stack: Stack) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{demo_stack.dashboard_url}/nodes/gpu-server-1")
        page.wait_for_selector("#procs-table")
        frame = page.evaluate(
            "() => { const w = document.querySelector('#procs-table');"
            " return [w.scrollWidth > w.clientWidth, document.documentElement.scrollWidth]; }"
        )
        assert frame == [True, 390]  # the table scrolls; the page itself does not
    finally:
        context.close()
