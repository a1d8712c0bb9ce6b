"""Real plurals (issue 44): no page says "GPU(s)" or "pod(s)"; counts pick the language's
plural form from the catalogs (English two forms, Korean one), refusals included.

The overview and findings pages have their own test (tests/web/test_page_views.py and the
browser walk); here: usage, node pages, the admin pages, fit, history and the docs.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from app.domain.changes.models import PlanRefused, RefusalCode
from app.i18n.translate import CATALOGS, PLURAL_IDS, Translator
from app.web.views.refusal_text import refusal_text
from tests.conftest import Stack
from tests.live import wait_for
from tests.web.test_admin_pages_i18n import log_in

# "GPU(s)", "pod(s)", "process(es)": a count worded without choosing a form.
PLURAL_BY_PARENTHESES = re.compile(r"\w\((?:s|es)\)")
NODES = ("gpu-server-1", "gpu-server-4", "gpu-ws-5", "gpu-ts-7", "gpu-mig-8", "gpu-dra-9")
PAGES = (
    "/usage",
    "/usage?by=node",
    "/usage?by=owner",
    "/usage/history",
    "/fit",
    "/admin/plugin",
    "/admin/plugin/rollout",
    "/admin/changes",
    "/docs/findings",
    *(f"/nodes/{node}" for node in NODES),
    *(f"/nodes/{node}/history" for node in NODES),
    *(f"/admin/nodes/{node}/gpus" for node in NODES),
)


def test_no_page_words_a_count_with_parenthesised_plurals(
    make_stack: Callable[..., Stack],
) -> None:
    stack = make_stack("demo")
    wait_for(
        lambda: all(
            (n.get("agent") or {}).get("fresh")
            for n in stack.client.get("/api/v1/nodes").json().get("nodes") or [{}]
        ),
        timeout_s=30,
        what="every agent fresh",
    )
    log_in(stack)
    found: dict[str, list[str]] = {}
    for lang in ("en", "ko"):
        for page in PAGES:
            separator = "&" if "?" in page else "?"
            response = stack.client.get(f"{page}{separator}lang={lang}")
            assert response.status_code == 200, (page, response.status_code)
            text = re.sub(r"<[^>]+>", " ", response.text)  # what a reader sees, not markup
            hits = PLURAL_BY_PARENTHESES.findall(text)
            if hits:
                found[f"{lang} {page}"] = hits
    assert found == {}
    usage = stack.client.get("/usage?by=node&lang=en").text
    assert "+ 3 DRA devices" in usage  # gpu-dra-9's three claimed devices, worded as many


def test_no_catalog_message_words_a_plural_in_parentheses() -> None:
    worded = {
        (lang, key): text
        for lang, messages in CATALOGS.items()
        for key, text in messages.items()
        if PLURAL_BY_PARENTHESES.search(text)
    }
    assert worded == {}


@pytest.mark.parametrize(
    ("key", "params", "one", "many"),
    [
        ("usage_dra_devices", {}, "+ 1 DRA device", "+ 2 DRA devices"),
        ("dra_devices_free", {}, "1 device free", "2 devices free"),
        (
            "rollout_progress",
            {"updated": 0, "desired": 1, "ready": 0},
            "0 of 1 plugin pod updated",
            "0 of 2 plugin pods updated",
        ),
        (
            "restart.shared-pods",
            {"daemonset": "kube-system/nvidia-device-plugin-daemonset", "nodes": 1},
            "(1 node) restarts once",
            "(2 nodes) restarts once",
        ),
        (
            "gpus_rollout_done",
            {"now": 1, "expected": 1},
            "advertises 1 slot, as expected",
            "advertises 2 slots, as expected",
        ),
    ],
)
def test_counts_pick_the_english_form_and_korean_has_one(
    key: str, params: dict[str, object], one: str, many: str
) -> None:
    english, korean = Translator("en"), Translator("ko")
    assert key in PLURAL_IDS["en"] and key in PLURAL_IDS["ko"]
    assert one in english.n(key, 1, **params)
    plural = {**params, **{k: 2 for k in ("now", "expected", "desired", "nodes") if k in params}}
    assert many in english.n(key, 2, **plural)
    assert korean.n(key, 1, **params) == CATALOGS["ko"][key].format(count=1, **params)


def test_an_id_without_plural_forms_gives_its_one_message() -> None:
    assert Translator("en").n("gpus_role_host", 3) == "Host"


def test_a_refusal_names_one_gpu_or_several_in_the_right_form() -> None:
    def held(gpus: list[str]) -> PlanRefused:
        return PlanRefused(
            RefusalCode.DRA_HELD_GPU,
            "dra-held-gpu",
            gpus=", ".join(gpus),
            node="gpu-dra-9",
            count=len(gpus),
        )

    assert refusal_text(held(["GPU-a"])).startswith("GPU GPU-a of node gpu-dra-9 is held by a DRA")
    assert refusal_text(held(["GPU-a", "GPU-b"])).startswith("GPUs GPU-a, GPU-b of node")
    assert "GPU-a" in refusal_text(held(["GPU-a"]), "ko")
