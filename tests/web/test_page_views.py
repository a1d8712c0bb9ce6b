"""Honest drawing helpers: unavailable slots, GPU severity from node findings, sparklines."""

from __future__ import annotations

from datetime import timedelta

from app.domain.snapshot import Finding, Scope, Severity
from app.domain.usage.idle import Point
from app.web.views.diffs import diff_lines
from app.web.views.sparks import spark
from app.web.views.views import gpu_severity, unavailable_slots
from tests.web.page_snapshots import NOW, host_split_node

UNHEALTHY = Finding(
    code="unhealthy-devices",
    severity=Severity.WARNING,
    scope=Scope.NODE,
    title="gpu-server-1: 1 of 2 devices are unhealthy",
    evidence={"capacity": 2, "allocatable": 1},
    remedy="nvidia-smi",
    node="gpu-server-1",
)


def test_free_cells_beyond_the_nodes_free_slots_are_unavailable_last_gpu_first() -> None:
    node = host_split_node().model_copy(update={"free": 0, "findings": [UNHEALTHY]})
    advertised = [g for g in node.gpus if g.role == "advertised"]
    empty = [g.uuid for g in advertised if g.held_slots < g.slots]
    assert unavailable_slots(node) == {empty[-1]: 1}
    assert unavailable_slots(host_split_node()) == {}


def test_gpu_severity_counts_node_findings_for_advertised_gpus_only() -> None:
    node = host_split_node().model_copy(update={"findings": [UNHEALTHY]})
    by_role = {g.role: gpu_severity(node, g) for g in node.gpus}
    assert by_role == {"advertised": "warning", "host": "none"}


def test_spark_scales_utilization_into_the_box() -> None:
    points = [
        Point(NOW + timedelta(seconds=30 * n), pct, None) for n, pct in enumerate((0, 50, 100))
    ]
    line = spark(points)
    assert line is not None
    assert (line.points, line.latest, line.count) == ("0.0,23.0 60.0,12.0 120.0,1.0", 100, 3)
    assert spark(points[:1]) is None


def test_diff_lines_kinds() -> None:
    kinds = [line.kind for line in diff_lines("--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same")]
    assert kinds == ["file", "file", "hunk", "del", "add", "same"]


def test_korean_idle_title_words_the_duration_in_korean() -> None:
    from app.domain.findings.usage import idle_holder_finding
    from app.domain.usage.idle import IdleHolder
    from app.web.views.finding_text import duration_ko, finding_title

    item = idle_holder_finding(
        IdleHolder("gpu-4", "GPU-1", 3, "ml/nb-0", 1, idle_s=2520, held_s=2600, watched_since=NOW)
    )
    assert finding_title(item, "ko") == (
        "ml/nb-0이(가) GPU 3의 슬롯 1개를 42분 동안 잡고 있지만 GPU 프로세스가 없습니다"
    )
    assert finding_title(item, "en") == (
        "ml/nb-0 holds 1 slot of GPU 3: held for 42 min, no GPU process"
    )
    assert [duration_ko(s) for s in (35, 3900, 7200)] == ["35초", "1시간 5분", "2시간"]
