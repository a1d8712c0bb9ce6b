"""The durable change history: records to labelled ConfigMaps and back, and retention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.domain.changes.durable import (
    RECORD_KEY,
    RECORD_LABEL,
    StoredRecord,
    UnreadableRecord,
    beyond_retention,
    history_listing,
    read_record,
    record_configmap,
    record_name,
)
from app.domain.changes.history import ChangeRecord, RecordKind, change_id, side_from_json
from app.domain.changes.models import ChangeWarning

AT = datetime(2026, 3, 1, 14, 30, 5, tzinfo=UTC)


def record(minutes: int = 0, *, kind: RecordKind = "mode", salt: str = "abc123") -> ChangeRecord:
    at = AT + timedelta(minutes=minutes)
    return ChangeRecord(
        id=change_id(at, salt),
        kind=kind,
        action="change",
        at=at,
        user="alice",
        summary="basic -> time-slicing x4",
        before=side_from_json(kind, "before", {"mode": "basic", "replicas": 1}),
        after=side_from_json(kind, "after", {"mode": "time-slicing", "replicas": 4}),
        node="gpu-1" if kind == "split" else None,
        warnings=(ChangeWarning("event-not-written", {"error": "timeout"}),)
        if minutes == 99
        else (),
    )


def stored(configmap: dict[str, Any], uid: str = "uid-1") -> dict[str, Any]:
    """The ConfigMap as the API server answers it (uid, creation time)."""
    meta = {**configmap["metadata"], "uid": uid, "creationTimestamp": "2026-03-01T14:30:06Z"}
    return {**configmap, "metadata": meta}


def labelled(name: str, data: object) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {RECORD_LABEL: "mode"},
            "creationTimestamp": "2026-03-01T00:00:00Z",
        },
        "data": data,
    }


def test_record_configmap_round_trip_returns_the_same_record() -> None:
    original = record(kind="split")

    configmap = stored(record_configmap(original, namespace="gpu-slots"))
    read = read_record(configmap)

    assert configmap["metadata"]["name"] == "gpu-slots-change-20260301-143005-000-abc123"
    assert configmap["metadata"]["namespace"] == "gpu-slots"
    assert configmap["metadata"]["labels"][RECORD_LABEL] == "split"
    assert configmap["data"]["outcome"] == "applied"
    assert read == StoredRecord(configmap["metadata"]["name"], "uid-1", original)


def test_record_configmap_with_warnings_says_so_in_its_outcome() -> None:
    configmap = record_configmap(record(99), namespace="gpu-slots")

    assert configmap["data"]["outcome"] == "applied-with-warnings"
    assert json.loads(configmap["data"][RECORD_KEY])["warnings"] == [
        {"code": "event-not-written", "params": {"error": "timeout"}}
    ]
    read = read_record(stored(configmap))
    assert isinstance(read, StoredRecord)
    assert read.record.warnings == (ChangeWarning("event-not-written", {"error": "timeout"}),)


def test_a_record_kept_before_warnings_were_codes_reads_its_english_warning() -> None:
    configmap = stored(record_configmap(record(), namespace="gpu-slots"))
    kept = json.loads(configmap["data"][RECORD_KEY])
    kept["warnings"] = ["The change is applied, but the Event was refused."]
    configmap["data"][RECORD_KEY] = json.dumps(kept)

    read = read_record(configmap)

    assert isinstance(read, StoredRecord)
    assert read.record.warnings == (
        ChangeWarning("recorded", {"text": "The change is applied, but the Event was refused."}),
    )


def test_read_record_without_the_label_returns_none() -> None:
    configmap = record_configmap(record(), namespace="gpu-slots")
    configmap["metadata"]["labels"] = {"app": "other"}

    assert read_record(configmap) is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({RECORD_KEY: "{not json"}, "not-json"),
        ({RECORD_KEY: json.dumps({"id": "x", "at": "yesterday", "kind": "mode"})}, "malformed"),
    ],
)
def test_a_record_a_parser_refuses_quotes_the_parser(data: object, why: str) -> None:
    read = read_record(labelled("gpu-slots-change-x", data))

    assert isinstance(read, UnreadableRecord)
    assert read.why == why
    assert read.params["error"]  # the parser's own words, shown as evidence


@pytest.mark.parametrize(
    ("data", "why", "params"),
    [
        (None, "no-record", {"key": "record.json"}),
        ({"other": "x"}, "no-record", {"key": "record.json"}),
        ({RECORD_KEY: "[1, 2]"}, "not-an-object", {}),
        ({RECORD_KEY: json.dumps({"id": "x"})}, "missing-field", {"field": "at"}),
        ({RECORD_KEY: "[NaN]"}, "number-constant", {"key": "record.json", "name": "NaN"}),
        (
            {RECORD_KEY: "[" + "1" * 30 + "]"},
            "number-too-long",
            {"key": "record.json", "digits": 30},
        ),
        ({RECORD_KEY: "[" * 40 + "]" * 40}, "too-deep", {"key": "record.json", "levels": 16}),
        (
            {
                RECORD_KEY: json.dumps(
                    {"id": "x", "at": "2026-03-01T00:00:00Z", "kind": "reboot", "action": "change"}
                )
            },
            "unknown-kind",
            {"kind": "reboot", "action": "change"},
        ),
        (
            {
                RECORD_KEY: json.dumps(
                    {
                        "id": "x",
                        "at": "2026-03-01T00:00:00Z",
                        "kind": "mode",
                        "action": "change",
                        "before": [1],
                    }
                )
            },
            "before-after-not-objects",
            {},
        ),
    ],
)
def test_read_record_with_garbage_data_returns_unreadable_with_reason(
    data: object, why: str, params: dict[str, object]
) -> None:
    read = read_record(labelled("gpu-slots-change-x", data))

    assert isinstance(read, UnreadableRecord)
    assert read.name == "gpu-slots-change-x"
    assert (read.why, read.params) == (why, params)
    assert read.created_at == datetime(2026, 3, 1, tzinfo=UTC)


def test_read_record_under_another_name_returns_unreadable() -> None:
    """A record copied under another name is not trusted: its rollback would be someone's."""
    configmap = record_configmap(record(), namespace="gpu-slots")
    configmap["metadata"]["name"] = "gpu-slots-change-forged"

    read = read_record(configmap)

    assert isinstance(read, UnreadableRecord)
    assert (read.why, read.params) == ("misnamed", {"change": "20260301-143005-000-abc123"})


def test_read_record_labelled_with_another_kind_returns_unreadable() -> None:
    configmap = record_configmap(record(), namespace="gpu-slots")
    configmap["metadata"]["labels"][RECORD_LABEL] = "split"

    assert isinstance(read_record(configmap), UnreadableRecord)


@pytest.mark.parametrize("change", ["", "UPPER", "a/b", "../x", "-x", "x" * 240])
def test_record_name_of_an_impossible_id_returns_none(change: str) -> None:
    assert record_name(change) is None


def test_history_listing_is_newest_first_with_unreadable_apart() -> None:
    items = [
        stored(record_configmap(record(1), namespace="n"), "u1"),
        labelled("gpu-slots-change-garbage", {"record.json": "[]"}),
        {"metadata": {"name": "unrelated"}, "data": {}},
        stored(record_configmap(record(3), namespace="n"), "u3"),
        stored(record_configmap(record(2), namespace="n"), "u2"),
    ]

    listing = history_listing(items)

    assert [r.at.minute for r in listing.records] == [33, 32, 31]
    assert [u.name for u in listing.unreadable] == ["gpu-slots-change-garbage"]


def test_beyond_retention_returns_the_oldest_readable_past_keep() -> None:
    items = [stored(record_configmap(record(m), namespace="n"), f"u{m}") for m in (4, 1, 3, 2)]
    items.append(labelled("gpu-slots-change-garbage", None))

    old = beyond_retention(items, keep=2)

    assert [(s.uid, s.record.at.minute) for s in old] == [("u1", 31), ("u2", 32)]


@pytest.mark.parametrize(("count", "keep", "deleted"), [(0, 5, 0), (3, 3, 0), (3, 5, 0), (3, 0, 2)])
def test_beyond_retention_within_keep_deletes_nothing(count: int, keep: int, deleted: int) -> None:
    """A keep of 0 still keeps the newest: the change just made is never pruned."""
    items = [stored(record_configmap(record(m), namespace="n"), f"u{m}") for m in range(count)]

    assert len(beyond_retention(items, keep=keep)) == deleted
