"""Screenshots of the main pages over the demo: `python -m tests.browser.screenshots [out_dir]`.

Starts the demo scenario (simulator + dashboard on loopback), waits until every node has an
agent report and the idle notebook is flagged, and saves overview, node detail, findings and
usage at 1280 px in the light scheme, plus Korean (real glyphs with fonts-noto-cjk), phone
width and the dark scheme. Fails loudly if a page is missing its parts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

from app.simulator.world.cluster import SimulatedCluster
from app.web.server import build_app
from tests.browser.chromium import CHROMIUM, MISSING, launch
from tests.conftest import AGENT_TOKEN, stack_settings
from tests.live import LiveServer, wait_for

ROOT = Path(__file__).resolve().parents[2]
SHOTS = (
    ("overview", "/", 1280, "en", "node-line-gpu-server-1", "light"),
    ("node-detail", "/nodes/gpu-server-4", 1280, "en", "processes", "light"),
    ("findings", "/findings", 1280, "en", "count-error", "light"),
    ("findings-ko-errors", "/findings?severity=error", 1280, "ko", "count-error", "light"),
    ("usage", "/usage", 1280, "en", "usage-table", "light"),
    ("overview-ko", "/", 1280, "ko", "node-line-gpu-server-1", "light"),
    ("overview-phone", "/", 390, "en", "node-line-gpu-server-1", "light"),
    ("node-detail-phone", "/nodes/gpu-server-1", 390, "ko", "processes", "light"),
    ("overview-dark", "/", 1920, "en", "node-line-gpu-server-1", "dark"),
)


def all_reported(client: httpx.Client) -> bool:
    response = client.get("/api/v1/nodes")
    if response.status_code != 200:
        return False
    nodes = [node for node in response.json()["nodes"] if node["gpu_node"]]
    return bool(nodes) and all(node["agent"] is not None for node in nodes)


def idle_flagged(client: httpx.Client) -> bool:
    findings = client.get("/api/v1/findings").json()["findings"]
    return any(item["code"] == "slot-held-idle" for item in findings)


def main(argv: list[str]) -> int:
    if not CHROMIUM.exists():
        print(MISSING, file=sys.stderr)
        return 2
    out_dir = Path(argv[0]) if argv else ROOT / "docs" / "screenshots"
    out_dir.mkdir(parents=True, exist_ok=True)
    simulator = SimulatedCluster("demo")
    settings = stack_settings(idle_slot_after_s=5.0, low_utilization_after_s=3600.0)
    server = LiveServer(build_app(settings, kube_server=simulator.start(host="127.0.0.1", port=0)))
    url = server.start()
    simulator.configure_agents(report_to=url, token=AGENT_TOKEN, interval_s=0.5)
    try:
        with httpx.Client(base_url=url, timeout=10) as client:
            wait_for(lambda: all_reported(client), timeout_s=20, what="agent reports")
            wait_for(lambda: idle_flagged(client), timeout_s=30, what="the idle notebook")
            wait_for(  # two 30 s buckets of history make a sparkline
                lambda: 'data-testid="spark-' in client.get("/nodes/gpu-server-4").text,
                timeout_s=90,
                what="sparklines",
            )
        with sync_playwright() as playwright:
            browser = launch(playwright)
            for name, path, width, lang, testid, scheme in SHOTS:
                context = browser.new_context(
                    viewport={"width": width, "height": 900},
                    color_scheme=scheme,  # type: ignore[arg-type]
                    extra_http_headers={"Accept-Language": lang},
                )
                page = context.new_page()
                page.goto(f"{url}{path}")
                page.get_by_test_id(testid).first.wait_for(state="visible", timeout=10_000)
                target = out_dir / f"{name}.png"
                page.screenshot(path=str(target), full_page=True)
                print(f"wrote {target}")
                context.close()
            browser.close()
    finally:
        server.stop()
        simulator.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
