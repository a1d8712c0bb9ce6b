"""Issue 44: what a page says of a finding's evidence, a moment and a mixed cluster."""

from __future__ import annotations

from datetime import UTC, datetime

from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import remedy
from app.domain.snapshot import Finding
from app.web.views.evidence import evidence_rows
from app.web.views.times import when


def _idle() -> Finding:
    return finding(
        "slot-held-idle",
        evidence={
            "pod": "ml/train-0",
            "idle_for": "2 min",
            "idle_for_s": 166,
            "ready": False,
            "watched_since": "2026-12-06T09:00:16.944214+00:00",
            "NVIDIA_VISIBLE_DEVICES": "2,3",
        },
        remedy=remedy("", "host-process-editor", pid=1, node="gpu-server-1"),
        node="gpu-server-1",
    )


def test_evidence_is_worded_with_booleans_as_words_and_no_seconds_twin() -> None:
    en = {label: str(value) for label, value, _ in evidence_rows(_idle(), "en")}
    ko = {label: str(value) for label, value, _ in evidence_rows(_idle(), "ko")}
    assert en["Ready"] == "no" and ko["준비됨"] == "아니요"
    assert "Idle for" in en and "idle_for_s" not in en and "idle_for" not in en
    assert en["NVIDIA_VISIBLE_DEVICES"] == "<code>2,3</code>"  # a name stays a name
    assert 'datetime="2026-12-06T09:00:16Z"' in en["Watched since"]
    assert ".944214" not in en["Watched since"]


def test_a_moment_is_a_time_element_to_the_minute_with_the_second_on_hover() -> None:
    shown = str(when(datetime(2026, 12, 6, 8, 34, 4, 123456, tzinfo=UTC)))
    assert shown == (
        '<time datetime="2026-12-06T08:34:04Z" title="2026-12-06 08:34:04 UTC" data-when>'
        "2026-12-06 08:34 UTC</time>"
    )
    assert when(None) == "" and when("soon") == "soon"
