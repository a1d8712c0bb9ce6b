"""Pages of issue 16 over a fixed snapshot: filters, Korean titles, docs contents, usage."""

from __future__ import annotations

import re
from datetime import timedelta

from app.web.views.finding_text import finding_explanation, finding_summary
from tests.web.page_snapshots import NOW, demo_like, page_app
from tests.web.test_pages import get


def test_overview_bad_filter_is_400_with_what_is_accepted() -> None:
    app, _ = page_app(demo_like())
    response = get(app, "/?sort=price")
    assert response.status_code == 400
    assert (
        "<code>sort</code> must be one of <code>name, free, severity</code>, "
        "not <code>&#39;price&#39;</code>" in response.text
    )


def test_overview_filter_keeps_matching_nodes_and_polls_with_the_same_filter() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/?q=server-2&lang=en").text
    assert 'data-testid="node-gpu-server-2"' in html
    assert 'data-testid="node-gpu-server-1"' not in html
    assert 'hx-get="/fragments/overview?q=server-2&amp;lang=en"' in html
    fragment = get(app, "/fragments/overview?q=server-2").text
    assert 'data-testid="node-gpu-server-1"' not in fragment


def test_findings_bad_filter_is_400_and_its_live_fragment_shows_all_instead() -> None:
    app, _ = page_app(demo_like(host_process_on_advertised=True))
    response = get(app, "/findings?severity=loud&lang=en")
    assert response.status_code == 400
    assert "&#39;loud&#39;" in response.text
    fragment = get(app, "/fragments/findings?severity=loud&lang=en")
    assert fragment.status_code == 200
    assert re.findall(r'<li class="finding sev-(\w+)"', fragment.text) == re.findall(
        r'<li class="finding sev-(\w+)"', get(app, "/fragments/findings?lang=en").text
    )
    assert "error" in re.findall(r'<li class="finding sev-(\w+)"', fragment.text)


def test_overview_live_fragment_with_a_bad_filter_shows_every_node() -> None:
    app, _ = page_app(demo_like())
    fragment = get(app, "/fragments/overview?sort=price&q=server-2")
    assert fragment.status_code == 200
    assert 'data-testid="node-gpu-server-1"' in fragment.text
    assert 'data-testid="node-gpu-server-2"' in fragment.text


def test_overview_filter_without_match_says_so() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/?q=nothing-like-this").text
    assert 'data-testid="nodes-none-match"' in html


def test_findings_severity_error_korean_shows_only_errors_with_korean_title() -> None:
    app, _ = page_app(demo_like(host_process_on_advertised=True))
    html = get(app, "/findings?severity=error&lang=ko").text
    severities = re.findall(r'<li class="finding sev-(\w+)"', html)
    assert severities == ["error"]
    # The fixed finding has no params: the Korean summary stands in for the title.
    assert finding_summary("host-process-on-advertised-gpu", "ko") in html
    assert 'data-testid="filter-shown" data-count="1"' in html
    assert 'href="/nodes/gpu-server-1?lang=ko" data-testid="finding-node-link"' in html


def test_findings_docs_in_korean_have_contents_and_a_section_per_code() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/docs/findings?lang=ko").text
    assert 'data-testid="doc-contents"' in html
    assert '<a href="#slot-held-idle"><code>slot-held-idle</code></a>' in html
    assert '<h2 id="slot-held-idle">slot-held-idle</h2>' in html
    assert str(finding_explanation("slot-held-idle", "ko")) in html


def test_findings_docs_in_english_keep_the_markdown_with_contents() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/docs/findings?lang=en").text
    assert 'data-testid="doc-contents"' in html
    assert '<h2 id="plugin-daemonset-missing">plugin-daemonset-missing</h2>' in html


def test_usage_page_groups_holders_by_namespace_with_links() -> None:
    app, _ = page_app(demo_like())
    html = get(app, "/usage?by=namespace").text
    rows = re.findall(r'data-testid="usage-row" data-key="([^"]+)"', html)
    assert rows == ["serving"]  # the host-split node's inference pod
    assert get(app, "/usage?by=team").status_code == 422


def test_node_page_draws_a_sparkline_per_gpu_from_the_idle_history() -> None:
    snapshot = demo_like()
    app, runtime = page_app(snapshot)
    node = snapshot.nodes[0]
    assert node.agent is not None
    for minute in range(3):  # three 30 s buckets of utilization
        at = NOW + timedelta(minutes=minute)
        history_snapshot = snapshot.model_copy(
            update={
                "nodes": [
                    node.model_copy(
                        update={"agent": node.agent.model_copy(update={"collected_at": at})}
                    )
                ]
            }
        )
        runtime.snapshots.usage.observe(history_snapshot, now=at)
    html = get(app, f"/nodes/{node.name}").text
    gpu = node.gpus[0]
    assert f'data-testid="spark-{gpu.uuid}"' in html
    assert '<svg class="spark" viewBox="0 0 120 24"' in html
    assert "style=" not in html.split('data-testid="processes"')[0]  # CSP: no inline styles
