"""Compact views (issue 44): one line per node or finding past a screenful, the choice kept;
one finding per root cause with its consequences folded beneath it."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.domain.snapshot import Snapshot
from app.web.views.filters import FilterError
from app.web.views.finding_groups import element_id, grouped
from app.web.views.page_view import is_compact, parse_view, view_cookie
from tests import factories as f
from tests.domain.worlds import snap, world
from tests.web.page_snapshots import big_cluster, demo_like, page_app

SPLIT = f.host_split_uuids()


def node_lines(html: str) -> list[str]:
    return re.findall(r'data-testid="node-line-([^"]+)"', html)


def open_findings(html: str) -> int:
    return len(re.findall(r'<details id="finding-[0-9a-f]+" open>', html))


def crash_looping() -> Snapshot:
    """The demo's gpu-ws-5 on one node: a GPU the node lacks in NVIDIA_VISIBLE_DEVICES."""
    env = {"NVIDIA_VISIBLE_DEVICES": SPLIT + ",GPU-elsewhere-9", "FAIL_ON_INIT_ERROR": "false"}
    return snap(
        world(
            ds_kwargs={"env": env},
            plugin_pod_kwargs={"ready": False, "waiting_reason": "CrashLoopBackOff"},
            allocatable=None,
        )
    )


def test_more_than_eight_nodes_are_one_line_each_by_default() -> None:
    app, _ = page_app(big_cluster(9))
    with TestClient(app) as client:
        page = client.get("/?lang=en").text

    assert node_lines(page) == [f"gpu-{n:03d}" for n in range(9)]
    assert 'data-testid="view-switch" data-view="compact"' in page
    assert '<details id="nodeline-gpu-000" ' in page  # closed: opens in place
    assert 'data-testid="node-gpu-000"' in page  # the card is inside, for the curious


def test_eight_nodes_keep_their_cards_and_a_choice_is_remembered() -> None:
    app, _ = page_app(big_cluster(8))
    with TestClient(app) as client:
        default = client.get("/?lang=en").text
        chosen = client.get("/?lang=en&view=compact")
        kept = client.get("/?lang=en").text
        live = client.get("/fragments/overview?lang=en").text
        back = client.get("/?lang=en&view=full")
        full = client.get("/?lang=en").text

    assert node_lines(default) == [] and 'data-view="full"' in default
    assert chosen.cookies.get(view_cookie("overview")) == "compact"
    assert len(node_lines(chosen.text)) == 8
    assert len(node_lines(kept)) == 8  # the cookie, with no parameter
    assert 'hx-get="/fragments/overview?view=compact&amp;lang=en"' in chosen.text
    assert len(node_lines(live)) == 8  # the polled fragment keeps the view too
    assert back.cookies.get(view_cookie("overview")) == "full"
    assert node_lines(full) == []


def test_the_switch_keeps_the_filter() -> None:
    app, _ = page_app(big_cluster(12))
    with TestClient(app) as client:
        page = client.get("/?lang=en&q=gpu-00").text

    assert 'href="/?q=gpu-00&amp;view=full&amp;lang=en"' in page
    assert len(node_lines(page)) == 10


def test_a_bad_view_is_refused_with_what_is_accepted() -> None:
    app, _ = page_app(demo_like())
    with TestClient(app) as client:
        response = client.get("/findings?view=tiny&lang=en")

    assert response.status_code == 400
    assert "<code>compact, full</code>" in response.text


def test_a_cookie_that_is_not_a_view_is_ignored() -> None:
    app, _ = page_app(big_cluster(9))
    with TestClient(app) as client:
        client.cookies.set(view_cookie("overview"), "<b>")
        page = client.get("/?lang=en")

    assert page.status_code == 200 and len(node_lines(page.text)) == 9


def test_the_crash_looping_plugin_is_one_error_with_its_consequences_folded() -> None:
    snapshot = crash_looping()
    app, _ = page_app(snapshot)
    with TestClient(app) as client:
        page = client.get("/findings?lang=en").text
        overview = client.get("/?lang=en").text

    root = next(i for i in snapshot.findings if i.code == "visible-device-not-on-node")
    roots = re.findall(
        r'data-testid="finding-([a-z-]+)" data-severity="\w+" data-consequences', page
    )
    assert roots[0] == "visible-device-not-on-node"
    assert 'data-consequences="3"' in page
    top, nested = page.split('<ul class="findings nested"', 1)
    assert "data-caused-by" not in top
    assert nested.count('data-caused-by="visible-device-not-on-node"') == 3
    assert nested.count(f'href="#{element_id(root.id)}"') == 3  # each links its cause
    assert "3 more findings follow from it" in top
    assert "is not ready (CrashLoopBackOff)" in nested
    assert "advertises nothing: its pod is CrashLoopBackOff" in nested
    assert "(Running)" not in page  # the phase the badge does not show is never a title
    worst = re.search(r'data-testid="worst-gpu-1">(.*?)</p>', overview, re.S)
    assert worst is not None and "NVIDIA_VISIBLE_DEVICES lists" in worst.group(1)
    assert overview.count('data-testid="top-finding"') == 1  # the cause, not its three stories


def test_the_counts_say_how_many_findings_are_folded_under_their_cause() -> None:
    app, _ = page_app(crash_looping())
    with TestClient(app) as client:
        pages = {
            (path, lang): client.get(f"{path}?lang={lang}").text
            for path in ("/", "/findings")
            for lang in ("en", "ko")
        }
    for (path, lang), page in pages.items():
        folded = re.search(r'data-testid="count-folded" data-count="(\d+)">([^<]*)<', page)
        assert folded is not None, (path, lang)
        assert folded.group(1) == "3", (path, lang)
        said = {
            "en": "3 of them follow from another finding and are folded under their cause",
            "ko": "그중 3건은 다른 점검 결과에서 비롯되어 그 원인 아래에 접혀 있습니다",
        }[lang]
        assert folded.group(2) == said, (path, lang)
    app, _ = page_app(demo_like())
    with TestClient(app) as client:
        assert 'data-testid="count-folded"' not in client.get("/findings?lang=en").text


def test_korean_words_the_fold_and_the_switch() -> None:
    app, _ = page_app(crash_looping())
    with TestClient(app) as client:
        page = client.get("/findings?lang=ko&view=compact").text

    assert "이 문제로 생긴 점검 결과 3건" in page
    assert ">간략히</a>" in page and ">자세히</a>" in page
    assert open_findings(page) == 0


def test_a_consequence_filtered_alone_names_its_cause_on_the_node_s_findings() -> None:
    app, _ = page_app(crash_looping())
    with TestClient(app) as client:
        page = client.get("/findings?lang=en&code=plugin-pod-not-ready").text

    assert 'data-caused-by="visible-device-not-on-node"' in page
    assert 'href="/findings?node=gpu-1&amp;lang=en#finding-' in page


def test_grouping_keeps_order_and_folds_only_what_the_list_holds() -> None:
    snapshot = crash_looping()
    findings = snapshot.findings
    groups = grouped(findings)
    assert [g.finding.code for g in groups] == ["visible-device-not-on-node"]
    assert [c.code for c in groups[0].consequences] == [
        "allocatable-mismatch",
        "fail-on-init-silent-zero",
        "plugin-pod-not-ready",
    ]
    alone = grouped([i for i in findings if i.code != "visible-device-not-on-node"])
    assert [(g.finding.code, g.consequences) for g in alone] == [
        ("allocatable-mismatch", []),
        ("fail-on-init-silent-zero", []),
        ("plugin-pod-not-ready", []),
    ]


@pytest.mark.parametrize(
    ("view", "count", "compact"),
    [("", 10, False), ("", 11, True), ("full", 50, False), ("compact", 1, True)],
)
def test_compact_by_choice_or_past_the_threshold(view: str, count: int, compact: bool) -> None:
    assert is_compact(parse_view({"view": view}), count, above=10) is compact


def test_parse_view_refuses_other_values() -> None:
    with pytest.raises(FilterError):
        parse_view({"view": "cards"})
