"""What the k3s tier reads on both sides: the dashboard's pages in headless Chromium, and
`kubectl describe node` and the mock's process list on the node.

Pages are read by their stable hooks (`data-testid`, `data-*`, form field names) and by the
figures they show, never by their wording: the same steps run in Korean and in English.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.kube_tools import kube_tools
from tests.node.world import NODE, NodeWorld, machine_file
from tests.real.world import ADMIN_TOKEN

DEADLINE_MS = 20_000
LOCALES = {"ko": "ko-KR", "en": "en-US"}


@contextmanager
def signed_in(world: NodeWorld, lang: str, path: str) -> Iterator[Any]:
    """A Chromium tab in `lang`, signed in with the admin token, at `path`."""
    if not CHROMIUM.exists():
        pytest.skip(MISSING)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            tab = browser.new_context(locale=LOCALES[lang]).new_page()
            tab.set_default_timeout(DEADLINE_MS)
            errors: list[str] = []
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.goto(f"{world.dashboard.url}/login?next={path}&lang={lang}")
            tab.get_by_test_id("login-token").fill(ADMIN_TOKEN)
            tab.get_by_test_id("login-button").click()
            tab.wait_for_url(f"**{path}*")
            yield tab
            assert errors == [], errors
        finally:
            browser.close()


def figure(tab: Any, testid: str) -> int | None:
    """A figure of a page (`<div data-testid=...><dt>label</dt><dd>n</dd>`) as a number."""
    text = tab.get_by_test_id(testid).locator("dd").inner_text().strip()
    return int(text) if text.isdigit() else None


def numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def node_page(tab: Any, world: NodeWorld, lang: str) -> dict[str, Any]:
    """The node page's figures and process rows (pid -> owner)."""
    tab.goto(f"{world.dashboard.url}/nodes/{NODE}?lang={lang}")
    rows = tab.get_by_test_id("process-row")
    owners = {}
    for index in range(rows.count()):
        row = rows.nth(index)
        pid = int(row.locator("td").nth(1).inner_text())
        owners[pid] = row.get_attribute("data-owner")
    return {
        "physical": figure(tab, f"node-physical-{NODE}"),
        "visible": figure(tab, f"node-visible-{NODE}"),
        "host": figure(tab, f"node-host-{NODE}"),
        "allocatable": figure(tab, f"node-allocatable-{NODE}"),
        "requested": figure(tab, f"node-requested-{NODE}"),
        "owners": owners,
        "findings": sorted(
            tab.get_by_test_id("node-findings")
            .locator("li[data-severity][data-testid^='finding-']")
            .evaluate_all("els => els.map(e => e.dataset.testid)")
        ),
    }


def describe_node(world: NodeWorld, resource: str = "nvidia.com/gpu") -> dict[str, int | None]:
    """`kubectl describe node`: the node's allocatable and allocated (requests) of `resource`."""
    config = world.plane.kubeconfig_for(world.plane.admin, "admin")
    done = subprocess.run(
        [str(kube_tools().kubectl), "describe", "node", NODE],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "KUBECONFIG": str(config)},
    )
    found: dict[str, int | None] = {"allocatable": None, "allocated": None}
    section = ""
    for line in done.stdout.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
        cells = line.split()
        if cells[:1] == [f"{resource}:"] and section == "Allocatable":
            found["allocatable"] = int(cells[1])
        elif cells[:1] == [resource] and section == "Allocated resources":
            found["allocated"] = int(cells[1])
    return found


def set_processes(world: NodeWorld, processes: dict[int, list[int]]) -> None:
    """The mock's process list: GPU index -> PIDs on it (each 2 GiB), the rest idle."""
    machine = machine_file("host-split", NODE)
    for index, gpu in enumerate(machine["gpus"]):
        gpu["processes"] = [{"pid": pid, "usedMemoryMiB": 2048} for pid in processes.get(index, [])]
    world.set_machine(machine)


def mock_processes(world: NodeWorld) -> dict[int, list[int]]:
    """What the mock library serves now: GPU index -> PIDs."""
    machine = json.loads(Path(world.machine_path).read_text())
    return {i: [p["pid"] for p in g.get("processes") or []] for i, g in enumerate(machine["gpus"])}
