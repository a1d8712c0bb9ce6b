"""The rollout record read back from the plugin DaemonSet's annotation is bounded (issue 33):
whoever may annotate the DaemonSet cannot make the read fail or grow."""

from __future__ import annotations

import json

import pytest

from app.domain.changes.rollout_record import (
    MAX_ANNOTATION_CHARS,
    MAX_NODES,
    ROLLOUT_ANNOTATION,
    rollout_record,
)


def _daemonset(annotation: str) -> dict[str, object]:
    return {"metadata": {"name": "plugin", "annotations": {ROLLOUT_ANNOTATION: annotation}}}


@pytest.mark.parametrize(
    "annotation",
    [
        json.dumps({"since": "x", "brokenBefore": ["n" * 40] * 2000}),  # over 32 KiB
        "[" * 20_000 + "]" * 12_000,  # deep: RecursionError, not ValueError
        '{"since": "x", "brokenBefore": 1e400}',
    ],
    ids=["too-long", "too-deep", "no-list"],
)
def test_a_hostile_rollout_annotation_reads_as_no_record(annotation: str) -> None:
    assert rollout_record(_daemonset(annotation)) is None


def test_a_record_keeps_at_most_max_nodes_broken_nodes() -> None:
    names = [f"n{i}" for i in range(MAX_NODES * 4)]
    raw = json.dumps({"since": "2026-01-01T00:00:00Z", "brokenBefore": names})
    assert len(raw) <= MAX_ANNOTATION_CHARS
    record = rollout_record(_daemonset(raw))
    assert record is not None and len(record.broken_before) == MAX_NODES
