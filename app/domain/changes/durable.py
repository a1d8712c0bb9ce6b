"""The durable change history: one labelled ConfigMap per change, read back and pruned.

The API server drops Events after an hour (k3s, and kube-apiserver's default --event-ttl),
so the history is kept apart from them: each applied change is a ConfigMap in the
dashboard's own namespace, labelled `gpu-slots.io/change-record=<kind>`, holding the whole
record as JSON, named after the change id. The newest `keep` are kept. RBAC cannot grant
by label, so the label is checked here: an object without it is not one of ours, and one
with it but no readable record is listed as unreadable, never trusted, never pruned.
Pure: records to ConfigMap manifests and back, and which to delete.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.domain.bounds import JsonRefused, read_json
from app.domain.changes.history import ChangeRecord, RecordInvalid, history, record_from_json
from app.domain.cluster import Manifest

RECORD_LABEL = "gpu-slots.io/change-record"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-slots"}
RECORD_KEY = "record.json"
OUTCOME_KEY = "outcome"
NAME_PREFIX = "gpu-slots-change-"
MAX_RECORD_BYTES = 512 * 1024  # a ConfigMap holds 1 MiB; a record is a few KiB
_CHANGE_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,200}[a-z0-9])?$")


@dataclass(frozen=True)
class StoredRecord:
    """A readable record and the ConfigMap holding it (its uid: delete exactly that one)."""

    name: str
    uid: str
    record: ChangeRecord
    verified: bool = False  # signed by this dashboard (app.domain.changes.signing)


@dataclass(frozen=True)
class UnreadableRecord:
    """A ConfigMap with the history's label whose data is not a record GPU Slots wrote."""

    name: str
    why: str  # what is wrong, a code (RecordInvalid.why), worded as `unreadable.<why>`
    params: dict[str, object] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True)
class HistoryListing:
    """Every record of the history, newest first, and the labelled objects that are not."""

    records: tuple[ChangeRecord, ...]
    unreadable: tuple[UnreadableRecord, ...] = ()
    unverified: frozenset[str] = frozenset()  # ids of records this dashboard did not sign

    def verified(self, record: ChangeRecord) -> bool:
        return record.id not in self.unverified


def record_name(change_id: str) -> str | None:
    """The ConfigMap name of a change (None: the id cannot be one GPU Slots made)."""
    if not _CHANGE_ID.match(change_id):
        return None
    name = NAME_PREFIX + change_id
    return name if len(name) <= 253 else None


def record_configmap(record: ChangeRecord, *, namespace: str) -> Manifest:
    """The ConfigMap that keeps `record` (kubectl shows who and what in its data)."""
    name = record_name(record.id)
    if name is None:
        raise ValueError("change-id-not-an-object-name", record.id)
    outcome = "applied-with-warnings" if record.warnings else "applied"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RECORD_LABEL: record.kind, **MANAGED_BY},
        },
        "data": {
            RECORD_KEY: json.dumps(record.as_json(), sort_keys=True, indent=1),
            OUTCOME_KEY: outcome,
        },
    }


def read_record(configmap: Manifest) -> StoredRecord | UnreadableRecord | None:
    """The record a ConfigMap keeps; None: not labelled as the history's (not ours)."""
    meta = configmap.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict) or RECORD_LABEL not in labels:
        return None
    name = str(meta.get("name") or "")
    created = _created_at(meta.get("creationTimestamp"))
    try:
        record = _parse(configmap.get("data"))
    except RecordInvalid as exc:
        return UnreadableRecord(name, exc.why, exc.params, created)
    if record_name(record.id) != name:
        return UnreadableRecord(name, "misnamed", {"change": record.id[:253]}, created)
    if labels.get(RECORD_LABEL) != record.kind:
        label = str(labels.get(RECORD_LABEL))[:64]
        return UnreadableRecord(name, "mislabelled", {"label": label, "kind": record.kind}, created)
    return StoredRecord(name, str(meta.get("uid") or ""), record)


def _parse(data: Any) -> ChangeRecord:
    if not isinstance(data, dict) or not isinstance(data.get(RECORD_KEY), str):
        raise RecordInvalid("no-record", key=RECORD_KEY)
    raw: str = data[RECORD_KEY]
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordInvalid("too-large", key=RECORD_KEY, limit=MAX_RECORD_BYTES)
    try:
        parsed = read_json(raw, max_depth=MAX_DEPTH)
    except JsonRefused as exc:
        raise RecordInvalid(exc.why, key=RECORD_KEY, **exc.params) from exc
    return record_from_json(parsed)


MAX_DEPTH = 16  # a record is a few levels deep; deeper is no record GPU Slots wrote


def _created_at(value: object) -> datetime | None:
    try:
        return datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def stored_records(items: list[Manifest]) -> tuple[list[StoredRecord], list[UnreadableRecord]]:
    """The readable records among `items` (oldest first) and the unreadable ones."""
    stored: list[StoredRecord] = []
    unreadable: list[UnreadableRecord] = []
    for item in items:
        read = read_record(item) if isinstance(item, dict) else None
        if isinstance(read, StoredRecord):
            stored.append(read)
        elif isinstance(read, UnreadableRecord):
            unreadable.append(read)
    stored.sort(key=lambda s: (s.record.at, s.record.id))
    unreadable.sort(key=lambda u: u.name)
    return stored, unreadable


def history_listing(items: list[Manifest]) -> HistoryListing:
    """The history the labelled ConfigMaps `items` hold, newest first."""
    stored, unreadable = stored_records(items)
    return HistoryListing(tuple(history([s.record for s in stored])), tuple(unreadable))


def beyond_retention(items: list[Manifest], *, keep: int) -> list[StoredRecord]:
    """The readable records past the newest `keep`, oldest first: the ones to delete.

    Unreadable objects are never counted nor deleted: what GPU Slots cannot read may be
    someone else's, and is left to the admin (the history page lists it).
    """
    stored, _ = stored_records(items)
    excess = len(stored) - max(keep, 1)
    return stored[:excess] if excess > 0 else []
