"""Every page and the admin flows in Korean, in headless Chromium: no English sentence shows.

The walk opens the overview, the findings (and their reference), every node, the usage
page, the plugin form, a mode change's preview, apply and rollout, the change history and
a node's GPU split editor with its preview, in Korean (Accept-Language: ko). On each it
reads the visible text outside `<code>`, `<pre>`, `<kbd>` and `<samp>` (names, commands)
and fails on a run of Latin-script words: names, codes, commands, units and numbers never
make such a run (they hold digits, dots, slashes, hyphens or are acronyms and CamelCase
kinds), sentences do. The Korean JSON `title` and `reason` fields are held to the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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

DEADLINE_MS = 10_000
SPLIT_NODE = "gpu-server-1"
KOREAN = {"Accept-Language": "ko-KR,ko;q=0.9"}
# A word of a sentence: letters only, lower case or capitalised ("the", "Plugin"). Acronyms
# (GPU, MIG), kinds (DaemonSet) and anything with a digit, dot, slash or hyphen are names.
_WORD = re.compile(r"^[(\"'«]*([A-Z]?[a-z]+)[)\"'»,.:;!?]*$")
# Words that may stand next to one another in Korean text: product and kind names.
_NAMES = {"Kubernetes", "Operator", "Prometheus", "Grafana", "Events", "Running", "Pending"}
_COMMANDS = {"kubectl", "helm"}
PROSE_RUN = 2  # two words of a sentence in a row ("Kubernetes Host" counts, with one name)

_VISIBLE_TEXT = """() => {
  const skip = new Set(["CODE", "PRE", "KBD", "SAMP", "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"]);
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    let el = node.parentElement, hidden = false;
    for (let up = el; up; up = up.parentElement) {
      if (skip.has(up.tagName)) { hidden = true; break; }
    }
    if (hidden || !node.textContent.trim()) continue;
    out.push(node.textContent.trim());
  }
  document.querySelectorAll("[title], [aria-label], [placeholder]").forEach((el) => {
    for (const a of ["title", "aria-label", "placeholder"]) {
      if (el.getAttribute(a)) out.push(el.getAttribute(a));
    }
  });
  return out;
}"""


def prose_runs(text: str) -> list[str]:
    """Runs of Latin-script sentence words in `text` (empty: none)."""
    runs: list[str] = []
    run: list[str] = []
    command = False  # the words after `kubectl` or `helm` are its arguments
    for token in [*text.split(), ""]:
        match = _WORD.match(token)
        command = bool(match) and (command or match[1] in _COMMANDS)
        if match and not command and match[1] not in _NAMES:
            run.append(token)
            continue
        if len(run) >= PROSE_RUN:
            runs.append(" ".join(run))
        run = []
    return runs


def test_the_detector_finds_english_prose_and_passes_names_codes_and_commands() -> None:
    assert (
        prose_runs("노드 gpu-server-1의 플러그인 파드가 준비되지 않았습니다 (CrashLoopBackOff)")
        == []
    )
    assert prose_runs("GPU 2개, nvidia.com/gpu 8개, 42 MiB, ml/nb-0, 10.0.0.1") == []
    assert prose_runs("DaemonSet nvidia-device-plugin-daemonset, MPS \u00d74, 12 s") == []
    assert prose_runs("쿠버네티스 Host") == []  # one word alone is a name
    assert prose_runs("Kubernetes Host") == []  # a name and one word
    assert prose_runs("Plugin pod p-1 still runs the old template.") == [
        "Plugin pod",
        "still runs the old template.",
    ]
    assert prose_runs("token login from 10.0.0.1") == ["token login from"]
    assert prose_runs("DaemonSet을 다시 시작(kubectl rollout restart)하여") == []


def _english(texts: list[str]) -> list[str]:
    return [f"{run!r} in {text[:120]!r}" for text in texts for run in prose_runs(text)]


@pytest.fixture(scope="module")
def korean(demo_stack: Stack) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(locale="ko-KR", extra_http_headers=KOREAN)
        tab = context.new_page()
        tab.set_default_timeout(DEADLINE_MS)
        yield tab
        browser.close()


def _check(tab: Any, where: str, found: dict[str, list[str]]) -> None:
    assert tab.locator("html").get_attribute("lang") == "ko", where
    english = _english(tab.evaluate(_VISIBLE_TEXT))
    if english:
        found[where] = english


def _open(tab: Any, stack: Stack, path: str, found: dict[str, list[str]]) -> None:
    tab.goto(f"{stack.dashboard_url}{path}")
    tab.wait_for_load_state("networkidle")
    _check(tab, path, found)


def _node_names(stack: Stack) -> list[str]:
    return [node["name"] for node in stack.client.get("/api/v1/nodes").json()["nodes"]]


def test_every_page_and_admin_flow_in_korean_has_no_english_sentence(
    korean: Any, demo_stack: Stack
) -> None:
    tab, stack, found = korean, demo_stack, {}
    nodes = _node_names(stack)
    for path in ["/", "/findings", "/docs/findings", "/usage", *[f"/nodes/{n}" for n in nodes]]:
        _open(tab, stack, path, found)
    _open(tab, stack, "/?mode=nope", found)  # a filter error, worded

    tab.goto(f"{stack.dashboard_url}/login?next=/admin/plugin")
    _check(tab, "/login", found)
    tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
    tab.get_by_test_id("login-button").click()
    expect(tab.get_by_test_id("current-mode")).to_be_visible()
    _check(tab, "/admin/plugin", found)

    tab.get_by_test_id("mode-time-slicing").check()
    tab.get_by_test_id("replicas").fill("2")
    tab.get_by_test_id("preview-button").click()
    expect(tab.get_by_test_id("apply-button")).to_be_visible()
    _check(tab, "mode change preview", found)
    tab.get_by_test_id("fix-failing-first").check()  # gpu-ws-5 would hold it: answer first
    tab.get_by_test_id("apply-button").click()
    expect(tab.get_by_test_id("fix-first")).to_be_visible()
    _check(tab, "fix the failing node first", found)
    _held_by_a_blind_api_write(stack)  # a rollout that waits, with its way forward
    tab.goto(f"{stack.dashboard_url}/admin/plugin/rollout")
    expect(tab.get_by_test_id("rollout-pending")).to_be_visible()
    expect(tab.get_by_test_id("pass-now-button")).to_be_visible()
    _check(tab, "rollout, held", found)
    tab.get_by_test_id("pass-now-button").click()
    expect(tab.get_by_test_id("rollout-done")).to_be_visible(timeout=60_000)
    _check(tab, "rollout, done", found)

    _open(tab, stack, "/admin/changes", found)
    for node in nodes:  # the editor of every node: refusals (DRA, other installs) included
        _open(tab, stack, f"/admin/nodes/{node}/gpus", found)
    _open(tab, stack, f"/admin/nodes/{SPLIT_NODE}/gpus", found)
    tab.get_by_test_id("gpu-0-host").check()
    tab.get_by_test_id("preview-button").first.click()
    expect(tab.get_by_test_id("apply-button")).to_be_visible()
    _check(tab, "split preview", found)
    assert found == {}


def _held_by_a_blind_api_write(stack: Stack) -> None:
    """Time-slicing x2 through the API without passing gpu-ws-5: the rollout holds there."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    body = {"mode": "time-slicing", "replicas": 2}
    preview = stack.client.put("/api/v1/plugin/config?dryRun=true", json=body, headers=headers)
    token = preview.json()["token"]
    applied = stack.client.put(
        "/api/v1/plugin/config", json={**body, "expectedToken": token}, headers=headers
    )
    assert applied.status_code == 200, applied.text


def _worded_fields(value: Any, keys: tuple[str, ...]) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str):
                yield item
            elif key in keys and isinstance(item, list):
                yield from (x for x in item if isinstance(x, str))
            else:
                yield from _worded_fields(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _worded_fields(item, keys)


def test_korean_json_titles_and_reasons_are_korean(demo_stack: Stack) -> None:
    findings = demo_stack.client.get("/api/v1/findings?limit=500", headers=KOREAN).json()
    titles = list(_worded_fields(findings, ("title",)))
    assert titles and all(re.search("[가-힣]", title) for title in titles)
    rollout = demo_stack.client.get("/api/v1/rollout", headers=KOREAN).json()
    worded = [*titles, *_worded_fields(rollout, ("pending", "reason"))]
    assert _english(worded) == []
    english = demo_stack.client.get("/api/v1/findings?limit=500").json()
    assert all(not re.search("[가-힣]", t) for t in _worded_fields(english, ("title",)))
