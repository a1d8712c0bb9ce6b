"""The HTML pages over hand-built snapshots: figures, drawing, escaping, languages, live parts."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from app.i18n import translate as i18n
from app.web.http import language
from app.web.http.html import safe_next
from app.web.views.docs_page import heading_anchor, markdown_to_html
from tests.web.page_snapshots import (
    HOST_FINDING,
    ROOT,
    demo_like,
    page_app,
    uuid,
)

TEMPLATES = ROOT / "app" / "web" / "assets" / "templates"
# Every user-facing template: the slot pages and the admin pages.
PAGE_TEMPLATES = sorted(
    [TEMPLATES / "base.html"]
    + [
        path
        for folder in ("pages", "partials", "macros", "admin")
        for path in (TEMPLATES / folder).rglob("*.html")
    ]
)
SERVER_1 = "gpu-server-1"


def get(app: FastAPI, url: str, **kwargs: object) -> httpx.Response:
    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get(url, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(fetch())


class Elements(HTMLParser):
    """Collects every element's attributes, and the text inside elements by data-testid."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: dict[str, str] = {}
        self._open: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        self.elements.append((tag, attributes))
        if tag not in ("meta", "link", "br", "img", "input"):
            self._open.append((tag, attributes.get("data-testid")))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            opened, _ = self._open.pop()
            if opened == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, testid in self._open:
            if testid:
                self.texts[testid] = self.texts.get(testid, "") + data

    def by_testid(self, testid: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.elements if attrs.get("data-testid") == testid]

    def text(self, testid: str) -> str:
        return " ".join(self.texts.get(testid, "").split())


def parse(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def section(html: str, testid: str) -> str:
    """The HTML of the element carrying `testid` (sections do not nest their own kind)."""
    start = html.index(f'data-testid="{testid}"')
    end = html.find("</section>", start)
    return html[start:end]


# ---------------------------------------------------------------- overview


def test_overview_totals_show_the_snapshot_figures() -> None:
    app, _ = page_app(demo_like())
    page = parse(get(app, "/").text)
    expected = {
        "physical_gpus": "6",
        "visible_gpus": "4",
        "host_gpus": "2",
        "allocatable": "10",
        "free": "8",
    }
    for field, value in expected.items():
        assert page.by_testid(f"total-{field}")[0]["data-value"] == value, field
    assert page.text("plugin-ready") == "2/2"
    assert page.text("plugin-resource") == "nvidia.com/gpu"


def test_overview_host_split_server_draws_host_gpus_apart_without_slots() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/").text
    host = section(html, f"host-gpus-{SERVER_1}")
    advertised = section(html, f"advertised-gpus-{SERVER_1}")
    assert host.count('data-testid="gpu-GPU-') == 2
    assert advertised.count('data-testid="gpu-GPU-') == 2
    assert "slot-cell" not in host
    assert advertised.count('data-testid="slot-cell"') == 2
    assert "Kept for the host" in host


def test_overview_slot_cells_name_the_holding_pod_for_hover_and_screen_readers() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/").text
    advertised = section(html, f"advertised-gpus-{SERVER_1}")
    held = re.findall(
        r'<li class="slot held"[^>]*title="([^"]*)"><span class="vh">([^<]*)<', advertised
    )
    assert held == [("Held by serving/llm-0", "Held by serving/llm-0")]
    assert advertised.count('data-held="false"') == 1


def test_overview_marker_turns_error_when_a_host_process_uses_an_advertised_gpu() -> None:
    quiet, _ = page_app(demo_like())
    busy, _ = page_app(demo_like(host_process_on_advertised=True))
    marker = f"gpu-marker-{uuid(SERVER_1, 3)}"
    assert parse(get(quiet, "/").text).by_testid(marker)[0]["data-severity"] == "none"
    assert parse(get(busy, "/").text).by_testid(marker)[0]["data-severity"] == "error"


def test_overview_findings_summary_counts_and_lists_the_most_severe_first() -> None:
    app, _ = page_app(demo_like(host_process_on_advertised=True))
    page = parse(get(app, "/").text)
    assert page.by_testid("count-error")[0]["data-count"] == "1"
    assert page.by_testid("count-warning")[0]["data-count"] == "1"
    assert page.text("top-finding").startswith("Error")


def test_overview_memory_bar_widths_follow_the_split() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/").text
    gpu = section(html, f"advertised-gpus-{SERVER_1}")
    # GPU 2: 20 000 MiB of pods in 81 920 MiB -> 24 %, no host memory, the rest free.
    assert '<span class="seg pods w-24"></span><span class="seg host w-0"></span>' in gpu
    assert "seg free w-76" in gpu


def test_overview_stale_snapshot_shows_banner_with_age() -> None:
    app, _ = page_app(demo_like(stale=True))
    page = parse(get(app, "/").text)
    assert "42 s" in page.text("stale-banner")
    fresh, _ = page_app(demo_like())
    assert parse(get(fresh, "/").text).by_testid("stale-banner") == []


def test_overview_without_snapshot_shows_listing_state_that_polls() -> None:
    app, _ = page_app(None)
    response = get(app, "/")
    page = parse(response.text)
    assert response.status_code == 200
    assert "Listing the cluster" in page.text("listing")
    live = page.by_testid("live")[0]
    assert live["hx-get"] == "/fragments/overview?lang=en"
    assert live["hx-trigger"] == "every 5000ms"
    assert "Listing the cluster" in get(app, "/fragments/overview").text


def test_fragment_is_rendered_once_per_snapshot_and_language() -> None:
    app, runtime = page_app(demo_like())
    first = get(app, "/fragments/overview").text
    assert get(app, "/fragments/overview").text == first
    assert runtime.snapshots.renders == 1
    assert 'data-testid="node-gpu-server-1"' in first
    assert "<html" not in first
    get(app, "/fragments/overview", headers={"Accept-Language": "ko"})
    assert runtime.snapshots.renders == 2
    runtime.snapshots.set(demo_like(host_process_on_advertised=True))
    assert 'data-severity="error"' in get(app, "/fragments/overview").text


def test_page_refresh_interval_comes_from_query_or_runtime() -> None:
    app, runtime = page_app(demo_like())
    assert parse(get(app, "/?refresh_s=0.5").text).by_testid("live")[0]["hx-trigger"] == (
        "every 500ms"
    )
    runtime.page_refresh_s = 2
    assert parse(get(app, "/").text).by_testid("live")[0]["hx-trigger"] == "every 2000ms"


# ---------------------------------------------------------------- node detail and findings


def test_node_detail_escapes_process_commands_and_lists_owners() -> None:
    app, _ = page_app(demo_like())
    response = get(app, f"/nodes/{SERVER_1}")
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
    owners = [attrs["data-owner"] for attrs in parse(response.text).by_testid("process-row")]
    assert sorted(owners) == ["host", "pod"]
    assert "serving/llm-0" in parse(response.text).text("pods")


def test_node_detail_unknown_node_is_404_with_message() -> None:
    app, _ = page_app(demo_like())
    response = get(app, "/nodes/no-such-node")
    assert response.status_code == 404
    assert "No node named no-such-node" in parse(response.text).text("node-missing")


def test_findings_page_shows_evidence_copyable_remedy_and_doc_link() -> None:
    app, _ = page_app(demo_like(host_process_on_advertised=True))
    html = get(app, "/findings").text
    page = parse(html)
    item = page.text(f"finding-{HOST_FINDING.code}")
    assert "host_memory_mib" in item and "30000" in item
    remedy = page.text("remedy")
    assert "NVIDIA_VISIBLE_DEVICES=<b>GPU-2</b>" in remedy  # shown as text, not markup
    assert "&lt;b&gt;GPU-2&lt;/b&gt;" in html
    buttons = [attrs for tag, attrs in page.elements if tag == "button" and "data-copy" in attrs]
    assert buttons and all(page_has_id(html, attrs["data-copy"]) for attrs in buttons)
    links = [attrs["href"] for attrs in page.by_testid("doc-link")]
    assert f"/docs/findings?lang=en#{HOST_FINDING.code}" in links


def page_has_id(html: str, element_id: str) -> bool:
    return f'id="{element_id}"' in html


# ---------------------------------------------------------------- docs


def test_docs_findings_renders_markdown_with_code_anchors_and_no_raw_html(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "findings.md").write_text(
        "# Findings\n\n## `host-process-on-advertised-gpu`\n\nA host process <script>x</script>.\n",
        encoding="utf-8",
    )
    app, _ = page_app(demo_like(), assets_dir=tmp_path)
    response = get(app, "/docs/findings")
    assert response.status_code == 200
    assert '<h2 id="host-process-on-advertised-gpu">' in response.text
    assert "<script>x</script>" not in response.text


def test_docs_findings_missing_file_is_a_clear_404(tmp_path: Path) -> None:
    app, _ = page_app(demo_like(), assets_dir=tmp_path)
    response = get(app, "/docs/findings")
    assert response.status_code == 404
    assert "docs/findings.md" in parse(response.text).text("doc-missing")


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("`plugin-not-found` — the DaemonSet is missing", "plugin-not-found"),
        ("host-process-on-advertised-gpu", "host-process-on-advertised-gpu"),
        ("GS001: title", "GS001"),
        ("", ""),
    ],
)
def test_heading_anchor_is_the_first_word(heading: str, anchor: str) -> None:
    assert heading_anchor(heading) == anchor


def test_markdown_to_html_escapes_raw_html() -> None:
    assert "&lt;b&gt;" in markdown_to_html("<b>bold</b> text")


# ---------------------------------------------------------------- languages


def test_pages_follow_accept_language_cookie_and_query() -> None:
    app, _ = page_app(demo_like())
    korean = get(app, "/", headers={"Accept-Language": "ko-KR,ko;q=0.9,en;q=0.8"}).text
    assert '<html lang="ko">' in korean and "클러스터 합계" in korean
    english = get(app, "/", headers={"Accept-Language": "en-US"}).text
    assert '<html lang="en">' in english and "Cluster totals" in english
    assert '<html lang="ko">' in get(app, "/", headers={"Cookie": "lang=ko"}).text
    assert '<html lang="en">' in get(app, "/?lang=en", headers={"Cookie": "lang=ko"}).text


def test_language_link_sets_cookie_and_returns_to_the_page() -> None:
    app, _ = page_app(demo_like())
    response = get(app, f"/lang/ko?next=/nodes/{SERVER_1}")
    assert response.status_code == 303
    assert response.headers["location"] == f"/nodes/{SERVER_1}"
    assert "lang=ko" in response.headers["set-cookie"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/findings", "/findings"),
        ("//evil.example", "/"),
        ("https://evil.example", "/"),
        (None, "/"),
    ],
)
def test_safe_next_refuses_other_sites(target: str | None, expected: str) -> None:
    assert safe_next(target) == expected


@pytest.mark.parametrize(
    ("query", "cookie", "accept", "expected"),
    [
        (None, None, None, "en"),
        (None, None, "ko-KR,ko;q=0.9", "ko"),
        (None, None, "fr-FR,ko;q=0.5,en;q=0.8", "en"),
        (None, None, "en;q=0,ko;q=0.1", "ko"),
        (None, "ko", "en", "ko"),
        ("en", "ko", "ko", "en"),
        ("xx", None, "ko", "ko"),
    ],
)
def test_choose_language_prefers_query_then_cookie_then_header(
    query: str | None, cookie: str | None, accept: str | None, expected: str
) -> None:
    assert language.choose_language(query=query, cookie=cookie, accept_language=accept) == expected


def test_every_catalog_key_used_in_templates_exists() -> None:
    used: set[str] = set()
    for template in PAGE_TEMPLATES:
        used |= set(re.findall(r"""\bt\(\s*["']([\w-]+)["']\s*[,)]""", template.read_text()))
    assert used, "templates use the catalog"
    assert used <= set(i18n.CATALOGS["en"])


class VisibleText(HTMLParser):
    """Text nodes and user-visible attributes of a template with its Jinja parts removed."""

    VISIBLE_ATTRIBUTES = ("title", "aria-label", "alt", "placeholder", "value", "data-copied")

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [value or "" for name, value in attrs if name in self.VISIBLE_ATTRIBUTES]

    def handle_data(self, data: str) -> None:
        self.found.append(data)


@pytest.mark.parametrize("template", PAGE_TEMPLATES, ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_template_text_goes_through_the_catalog(template: Path) -> None:
    source = re.sub(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", " ", template.read_text(), flags=re.S)
    parser = VisibleText()
    parser.feed(source)
    words = [text.strip() for text in parser.found if re.search(r"[A-Za-z\uac00-\ud7a3]", text)]
    assert words == [], f"literal text in {template.name}: {words}"


@pytest.mark.parametrize("template", PAGE_TEMPLATES, ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_template_obeys_the_content_security_policy(template: Path) -> None:
    source = template.read_text()
    assert not re.search(r"\sstyle\s*=", source), "inline style attributes are blocked by the CSP"
    assert not re.search(r"<script(?![^>]*\bsrc=)", source), "inline scripts are blocked by the CSP"
    assert not re.search(r"\son[a-z]+\s*=", source), "inline event handlers are blocked by the CSP"
    assert "|safe" not in source.replace(" ", "")


def test_overview_names_pods_holding_slots_on_no_known_gpu() -> None:
    snapshot = demo_like()
    node = snapshot.nodes[0]
    extra = node.pods[0].model_copy(update={"pod": "ml/waiting-0", "uid": "u2"})
    moved = node.model_copy(update={"pods": [*node.pods, extra], "requested": 2})
    app, _ = page_app(snapshot.model_copy(update={"nodes": [moved, *snapshot.nodes[1:]]}))
    page = parse(get(app, "/").text)
    assert "ml/waiting-0" in page.text(f"unplaced-{SERVER_1}")
    assert "serving/llm-0" not in page.text(f"unplaced-{SERVER_1}")
