"""Issue 44: the split form's "Goes to" control in headless Chromium, English and Korean,
1400 and 400 px wide: per GPU a group named for it, with two visible, labelled radios
(Kubernetes, Host) that never overlap and stay on screen; clicking a label chooses, and the
form keeps the choice after Preview."""

from __future__ import annotations

from typing import Any

import pytest

from app.i18n.translate import CATALOGS
from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import ADMIN_TOKEN, Stack
from tests.live import wait_for
from tests.web.test_gpu_split_api import NODE, reported

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

EDITOR = f"/admin/nodes/{NODE}/gpus"
SEED = {0: "host", 1: "host", 2: "kubernetes", 3: "kubernetes"}  # host-split's gpu-server-1


def _inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["x"] >= outer["x"] - 1
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
        and inner["y"] >= outer["y"] - 1
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
    )


def _apart(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] + a["width"] <= b["x"] + 1
        or b["x"] + b["width"] <= a["x"] + 1
        or a["y"] + a["height"] <= b["y"] + 1
        or b["y"] + b["height"] <= a["y"] + 1
    )


@pytest.mark.parametrize(("lang", "width"), [("en", 1400), ("ko", 400), ("ko", 1400), ("en", 400)])
def test_each_gpu_has_two_labelled_choices_kept_after_preview(
    make_stack: Any, lang: str, width: int
) -> None:
    stack: Stack = make_stack("host-split")
    wait_for(lambda: reported(stack, NODE, 4), what="the agent report of gpu-server-1")
    words = CATALOGS[lang]
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        tab = browser.new_context(
            locale="ko-KR" if lang == "ko" else "en-US", viewport={"width": width, "height": 900}
        ).new_page()
        tab.set_default_timeout(15_000)
        tab.goto(f"{stack.dashboard_url}/login?next={EDITOR}&lang={lang}")
        tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
        tab.get_by_test_id("login-button").click()

        def radio(index: int, place: str) -> Any:
            group = tab.get_by_role("group", name=words["gpus_goes_to_legend"].format(index=index))
            return group.get_by_role("radio", name=words[f"gpus_role_{place}"], exact=True)

        for index, place in SEED.items():
            expect(radio(index, place)).to_be_checked()
            boxes = []
            for choice in ("kubernetes", "host"):
                label = (
                    tab.get_by_test_id(f"goes-to-{index}")
                    .locator("label")
                    .filter(has=tab.get_by_test_id(f"gpu-{index}-{choice}"))
                )
                expect(label).to_be_visible()
                expect(label).to_have_text(words[f"gpus_role_{choice}"])
                boxes.append(label.bounding_box())
            fieldset = tab.get_by_test_id(f"goes-to-{index}").bounding_box()
            assert _apart(*boxes), (index, boxes)
            assert all(_inside(box, fieldset) for box in boxes), (index, boxes, fieldset)
            assert fieldset["x"] + fieldset["width"] <= width, (index, fieldset)  # no scrolling

        # choosing by the words, as a person clicks them: GPU 2 to the host, GPU 0 to Kubernetes
        tab.get_by_test_id("goes-to-2").get_by_text(words["gpus_role_host"], exact=True).click()
        tab.get_by_test_id("goes-to-0").get_by_text(
            words["gpus_role_kubernetes"], exact=True
        ).click()
        expect(radio(2, "kubernetes")).not_to_be_checked()
        tab.get_by_test_id("preview-button").click()
        expect(tab.get_by_test_id("moves-to-host")).to_have_attribute("data-gpus", "2")
        for index, place in {0: "kubernetes", 1: "host", 2: "host", 3: "kubernetes"}.items():
            expect(radio(index, place)).to_be_checked()  # the form keeps what was chosen
        browser.close()
