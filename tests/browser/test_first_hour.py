"""Issue 44 in headless Chromium: the first hour with GPU Slots, as a newcomer meets it.

On the demo (the failing plugin pod on gpu-ws-5 included), in English and Korean, 1400 and
400 px wide: every page reads without internals (no unfilled `{...}`, no Python repr, tiles
whose labels never overlap) and the overview's GPU total is its parts; the mode switch with
the default options never leaves the cluster half-switched, a held rollout has its way
forward on the rollout page, and the change list undoes a mode change and a split, whose
preview says which GPUs go where.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.simulator.plugin.rollout import RolloutPace
from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for
from tests.web.test_demo_page_done_when import PACE_S, _all_reported, _start, _stop

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

DEADLINE_MS = 30_000
VIEWS = [("en", 1400), ("ko", 400)]
PAGES = (
    "/",
    "/findings",
    "/usage",
    "/admin/plugin",
    "/admin/changes",
    "/admin/plugin/rollout",
    "/admin/nodes/gpu-server-1/gpus",
    "/admin/nodes/gpu-ts-7/gpus",
)
UNFILLED = re.compile(r"\{[a-z_]+\}")
PYTHON_REPR = re.compile(r"\{'|'\}|\b(True|False|None)\b")


@pytest.fixture
def demo() -> Iterator[Stack]:
    stack = _start(pace=RolloutPace(terminating_s=PACE_S, creating_s=PACE_S))
    wait_for(lambda: _all_reported(stack.client), what="every GPU node's agent report")
    yield stack
    _stop(stack)


def _tab(playwright: Any, stack: Stack, lang: str, width: int) -> Any:
    browser = launch(playwright)
    context = browser.new_context(
        locale="ko-KR" if lang == "ko" else "en-US", viewport={"width": width, "height": 900}
    )
    tab = context.new_page()
    tab.set_default_timeout(DEADLINE_MS)
    tab.goto(f"{stack.dashboard_url}/login?next=/admin/plugin&lang={lang}")
    tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
    tab.get_by_test_id("login-button").click()
    expect(tab.get_by_test_id("signed-in")).to_be_visible()
    return tab


def _mode(stack: Stack) -> str:
    return str(stack.client.get("/api/v1/plugin/config").json()["mode"])


def _boxes_overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"] - 1
        and b["x"] < a["x"] + a["width"] - 1
        and a["y"] < b["y"] + b["height"] - 1
        and b["y"] < a["y"] + a["height"] - 1
    )


def _no_overlapping_labels(tab: Any, selector: str) -> None:
    """Each tile's label stays inside its tile, and no two tiles overlap (element boxes)."""
    tiles = tab.locator(selector)
    boxes = [tiles.nth(i).bounding_box() for i in range(tiles.count())]
    for i, tile in enumerate(boxes):
        label = tiles.nth(i).locator("dt").bounding_box()
        assert label["x"] + label["width"] <= tile["x"] + tile["width"] + 1, (selector, i)
        for other in boxes[i + 1 :]:
            assert not _boxes_overlap(tile, other), (selector, i)


@pytest.mark.parametrize(("lang", "width"), VIEWS)
def test_every_page_reads_without_internals_and_the_totals_add_up(
    demo: Stack, lang: str, width: int
) -> None:
    with sync_api.sync_playwright() as playwright:
        tab = _tab(playwright, demo, lang, width)
        for path in PAGES:
            tab.goto(f"{demo.dashboard_url}{path}?lang={lang}")
            text = tab.locator("main").inner_text()
            assert not UNFILLED.findall(text), (path, UNFILLED.findall(text))
            assert not PYTHON_REPR.search(text), (path, PYTHON_REPR.search(text))
            assert not re.search(r"\d\.\d{6}", text), path  # no microseconds
        tab.goto(f"{demo.dashboard_url}/admin/plugin?lang={lang}")
        _no_overlapping_labels(tab, "[data-testid=current-config] > div")
        expect(tab.get_by_test_id("replicas")).to_be_hidden()  # basic: no replicas to set
        expect(tab.get_by_test_id("allocation-policy")).to_have_count(0)  # a v0.18.2 plugin

        tab.goto(f"{demo.dashboard_url}/?lang={lang}")
        _no_overlapping_labels(tab, "section.totals dl.figures.big > .figure")
        total = tab.get_by_test_id("gpu-sum")
        parts = [int(p) for p in (total.get_attribute("data-parts") or "").split(",")]
        assert sum(parts) == int(total.get_attribute("data-physical") or -1)
        physical = tab.get_by_test_id("total-physical_gpus").get_attribute("data-value")
        assert physical == total.get_attribute("data-physical")
        dra = tab.get_by_test_id("total-dra_gpus").get_attribute("data-value")
        assert parts[3] == int(dra or -1) > 0  # the DRA GPUs are named on the page
        for tile in ("total-free", "total-stranded", "total-physical_gpus"):
            assert tab.get_by_test_id(tile).get_attribute("title")  # says what it counts
        mixed = demo.summary()["mode"] == "mixed"  # the headline never says one mode of many
        expect(tab.get_by_test_id("cluster-mode")).to_have_count(1 if mixed else 0)

        tab.goto(f"{demo.dashboard_url}/admin/nodes/gpu-server-1/gpus?lang={lang}")
        row = tab.get_by_test_id("gpu-row").first
        uuid = row.get_attribute("data-uuid")
        assert row.inner_text().count(uuid[:12]) == 1  # the UUID once, never twice
        tab.context.browser.close()


@pytest.mark.parametrize(("lang", "width"), VIEWS)
def test_mode_switch_with_the_defaults_never_half_applies_and_the_change_list_undoes_it(
    demo: Stack, lang: str, width: int
) -> None:
    with sync_api.sync_playwright() as playwright:
        tab = _tab(playwright, demo, lang, width)
        tab.get_by_test_id("mode-time-slicing").check()
        tab.get_by_test_id("preview-button").click()
        first = tab.locator("main > p").first  # the hold is said first, before any figure
        expect(first).to_have_attribute("data-testid", "failing-nodes")
        expect(first).to_contain_text("gpu-ws-5")

        tab.get_by_test_id("apply-button").click()  # no answer yet: the browser asks
        expect(tab.get_by_test_id("pass-failing")).to_be_visible()
        assert _mode(demo) == "basic"  # nothing written

        tab.get_by_test_id("fix-failing-first").check()
        tab.get_by_test_id("apply-button").click()
        expect(tab.get_by_test_id("fix-first")).to_contain_text("gpu-ws-5")
        assert _mode(demo) == "basic"  # fixing first writes nothing

        tab.get_by_test_id("mode-time-slicing").check()
        tab.get_by_test_id("preview-button").click()
        promised = tab.get_by_test_id("totals-before-after").get_attribute("data-after")
        tab.get_by_test_id("pass-failing-nodes").check()
        tab.get_by_test_id("apply-button").click()
        rollout = tab.get_by_test_id("rollout")
        expect(rollout).to_have_attribute("data-state", "done", timeout=60_000)
        wait_for(  # what the preview promised is what the apply did
            lambda: promised == str(demo.summary()["totals"]["allocatable"]),  # type: ignore[index]
            what=f"{promised} slots in the cluster, as the preview said",
        )

        tab.goto(f"{demo.dashboard_url}/admin/changes?lang={lang}")
        newest = tab.get_by_test_id("change-row").first
        expect(newest).to_have_attribute("data-outcome", "done")
        newest.get_by_test_id("undo-button").click()
        expect(tab.get_by_test_id("apply-form").locator("button[type=submit]")).to_have_count(1)
        tab.get_by_test_id("pass-failing-nodes").check()  # the undo would hold there too
        tab.get_by_test_id("rollback-confirm").click()
        expect(tab.get_by_test_id("rollout")).to_have_attribute("data-state", "done")
        wait_for(lambda: _mode(demo) == "basic", what="the mode change undone")
        tab.goto(f"{demo.dashboard_url}/admin/changes?lang={lang}")
        expect(tab.locator("[data-testid=change-row][data-outcome=undone]")).to_have_count(1)
        tab.context.browser.close()


def test_a_held_rollout_is_said_everywhere_and_its_page_lets_it_pass(demo: Stack) -> None:
    """A blind API write (no answer about the failing node) holds; the pages say so and
    the rollout page is the way forward."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    body = {"mode": "time-slicing", "replicas": 4}
    preview = demo.client.put("/api/v1/plugin/config?dryRun=true", json=body, headers=headers)
    token = preview.json()["token"]
    applied = demo.client.put(
        "/api/v1/plugin/config", json={**body, "expectedToken": token}, headers=headers
    )
    assert applied.status_code == 200, applied.text
    with sync_api.sync_playwright() as playwright:
        tab = _tab(playwright, demo, "en", 1400)
        expect(tab.get_by_test_id("plugin-rolling-out")).to_have_attribute("data-held", "gpu-ws-5")
        tab.get_by_test_id("mode-time-slicing").check()
        tab.get_by_test_id("replicas").fill("4")
        tab.get_by_test_id("preview-button").click()
        alert = tab.get_by_test_id("admin-error")
        expect(alert).to_contain_text("held at gpu-ws-5")  # never "nothing to change" alone
        tab.goto(f"{demo.dashboard_url}/admin/changes")
        expect(tab.get_by_test_id("change-row").first).to_have_attribute("data-outcome", "held")
        tab.goto(f"{demo.dashboard_url}/")
        expect(tab.get_by_test_id("overview-rolling-out")).to_have_attribute(
            "data-held", "gpu-ws-5"
        )

        tab.goto(f"{demo.dashboard_url}/admin/plugin/rollout")
        waiting = tab.get_by_test_id("rollout-waiting")
        expect(waiting).to_have_attribute("data-held", "gpu-ws-5")
        expect(waiting).to_have_attribute("data-stuck", "true")
        tab.get_by_test_id("pass-now-button").click()
        expect(tab.get_by_test_id("rollout")).to_have_attribute(
            "data-state", "done", timeout=60_000
        )
        expect(tab.get_by_test_id("rollout-budget")).to_have_attribute(
            "data-restored", "true", timeout=30_000
        )
        tab.context.browser.close()


def test_a_healthy_rollout_is_never_called_stuck(demo: Stack) -> None:
    """Passing the failing node at apply: every state the page shows on the way is moving."""
    with sync_api.sync_playwright() as playwright:
        tab = _tab(playwright, demo, "en", 1400)
        tab.get_by_test_id("mode-time-slicing").check()
        tab.get_by_test_id("preview-button").click()
        tab.get_by_test_id("pass-failing-nodes").check()
        tab.get_by_test_id("apply-button").click()
        seen: set[str] = set()
        rollout = tab.get_by_test_id("rollout")

        def done() -> bool:
            state = rollout.get_attribute("data-state") or ""
            seen.add(state)
            return state == "done"

        wait_for(done, what="the rollout done", timeout_s=60)
        assert "stuck" not in seen, seen
        tab.context.browser.close()


@pytest.mark.parametrize(("lang", "width"), VIEWS)
def test_the_split_preview_says_where_each_gpu_goes_and_the_change_list_undoes_it(
    make_stack: Any, lang: str, width: int
) -> None:
    stack = make_stack("host-split")
    editor = "/admin/nodes/gpu-server-1/gpus"
    with sync_api.sync_playwright() as playwright:
        tab = _tab(playwright, stack, lang, width)
        tab.goto(f"{stack.dashboard_url}{editor}?lang={lang}")
        tab.get_by_test_id("gpu-2-host").check()  # the seed gives Kubernetes GPUs 2 and 3
        tab.get_by_test_id("gpu-0-kubernetes").check()
        tab.get_by_test_id("preview-button").click()
        expect(tab.get_by_test_id("gpu-2-host")).to_be_checked()  # the form keeps the choice
        expect(tab.get_by_test_id("gpu-0-kubernetes")).to_be_checked()
        expect(tab.get_by_test_id("moves-to-host")).to_have_attribute("data-gpus", "2")
        expect(tab.get_by_test_id("moves-to-kubernetes")).to_have_attribute("data-gpus", "0")
        expect(tab.get_by_test_id("kubernetes-keeps")).to_have_attribute("data-gpus", "0,3")
        apply = tab.get_by_test_id("apply-button")
        assert (
            apply.bounding_box()["y"] < tab.locator("details.diff-fold").first.bounding_box()["y"]
        )
        diffs = tab.get_by_test_id("write-diff")
        for i in range(diffs.count()):
            text = diffs.nth(i).text_content() or ""
            assert not PYTHON_REPR.search(text), text
        expect(tab.get_by_test_id("host-processes")).to_contain_text("alice")  # on GPU 0
        tab.get_by_test_id("apply-confirm").check()
        apply.click()
        expect(tab.get_by_test_id("applied")).to_be_visible()

        tab.goto(f"{stack.dashboard_url}/admin/changes?lang={lang}")
        split = tab.locator("[data-testid=change-row][data-kind=split]").first
        split.get_by_test_id("undo-button").click()
        expect(tab.get_by_test_id("moves-to-kubernetes")).to_have_attribute("data-gpus", "2")
        tab.get_by_test_id("apply-button").click()
        expect(tab.get_by_test_id("applied")).to_be_visible()
        tab.goto(f"{stack.dashboard_url}/admin/changes?lang={lang}")
        expect(tab.locator("[data-testid=change-row][data-outcome=undone]")).to_have_count(1)
        tab.context.browser.close()
