"""Signed change records: verified only when name, label and record are the ones signed."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.domain.changes.durable import RECORD_KEY, RECORD_LABEL, record_configmap
from app.domain.changes.history import ChangeRecord, mode_side
from app.domain.changes.signing import (
    SIGNATURE_ANNOTATION,
    beyond_verified_retention,
    is_signed,
    signed,
    signing_key,
    verified_listing,
)

KEY = signing_key("the dashboard's secret")
AT = datetime(2026, 1, 1, tzinfo=UTC)


def _record(change_id: str, *, days: int = 0) -> Any:
    record = ChangeRecord(
        id=change_id,
        kind="mode",
        action="change",
        at=AT + timedelta(days=days),
        user="admin",
        summary="basic -> time-slicing x4",
        before=mode_side("before", {"mode": "basic"}),
        after=mode_side("after", {"mode": "time-slicing", "replicas": 4}),
    )
    manifest: Any = record_configmap(record, namespace="gpu-slots")
    manifest["metadata"]["uid"] = f"uid-{change_id}"
    return manifest


def test_a_record_signed_with_the_key_is_verified() -> None:
    assert is_signed(signed(_record("a"), KEY), KEY)
    assert not is_signed(_record("a"), KEY)  # no signature
    assert not is_signed(signed(_record("a"), signing_key("another secret")), KEY)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda m: m["data"].__setitem__(RECORD_KEY, m["data"][RECORD_KEY].replace("4", "64")),
        lambda m: m["metadata"]["labels"].__setitem__(RECORD_LABEL, "split"),
        lambda m: m["metadata"].__setitem__("name", "gpu-slots-change-other"),
        lambda m: m["metadata"]["annotations"].__setitem__(SIGNATURE_ANNOTATION, "0" * 64),
    ],
    ids=["record", "label", "name", "signature"],
)
def test_any_change_to_a_signed_record_makes_it_unverified(tamper: Any) -> None:
    manifest = copy.deepcopy(signed(_record("a"), KEY))
    tamper(manifest)
    assert not is_signed(manifest, KEY)


def test_listing_names_the_unverified_records() -> None:
    listing = verified_listing([signed(_record("a"), KEY), _record("forged")], KEY)
    assert [r.id for r in listing.records] == ["forged", "a"]
    assert listing.unverified == frozenset({"forged"})


def test_retention_counts_and_deletes_only_verified_records() -> None:
    genuine = [signed(_record(f"g{n}", days=n), KEY) for n in range(3)]
    forged = [_record(f"f{n}", days=1000 + n) for n in range(250)]
    assert beyond_verified_retention(genuine + forged, KEY, keep=3) == []
    deleted = beyond_verified_retention(genuine + forged, KEY, keep=2)
    assert [d.record.id for d in deleted] == ["g0"]
