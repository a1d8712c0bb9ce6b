"""Change records that prove their origin: an HMAC of the dashboard's secret on each one.

Anyone who may create ConfigMaps in the dashboard's namespace can write an object that
looks like a change record. The dashboard signs what it writes (annotation
`gpu-slots.io/record-signature`: HMAC-SHA256 over the object's name, its record label and
the exact `record.json` text), so a record is *verified* only when the signature matches;
anything else is listed as unverified, is never rolled back without a preview and an
explicit confirmation, is never offered outside its scope, and never counts towards (nor is
deleted by) retention. Pure: the key is handed in.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import replace

from app.domain.changes.durable import (
    RECORD_KEY,
    RECORD_LABEL,
    HistoryListing,
    StoredRecord,
    read_record,
    stored_records,
)
from app.domain.changes.history import history
from app.domain.cluster import Manifest

SIGNATURE_ANNOTATION = "gpu-slots.io/record-signature"
_CONTEXT = b"gpu-slots change record v1"


def signing_key(secret: str) -> bytes:
    """The history's key, derived from the dashboard's secret (never the secret itself)."""
    return hmac.new(secret.encode(), _CONTEXT, hashlib.sha256).digest()


def _signature(key: bytes, configmap: Manifest) -> str | None:
    meta = configmap.get("metadata") or {}
    labels = meta.get("labels") or {}
    data = configmap.get("data") or {}
    if not isinstance(labels, dict) or not isinstance(data, dict):
        return None
    raw = data.get(RECORD_KEY)
    if not isinstance(raw, str):
        return None
    signed = "\n".join((str(meta.get("name", "")), str(labels.get(RECORD_LABEL, "")), raw))
    return hmac.new(key, signed.encode(), hashlib.sha256).hexdigest()


def signed(configmap: Manifest, key: bytes) -> Manifest:
    """`configmap` (a record as record_configmap wrote it) with its signature annotation."""
    signature = _signature(key, configmap)
    if signature is None:
        raise ValueError("not-a-change-record")
    meta = dict(configmap.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), SIGNATURE_ANNOTATION: signature}
    return {**configmap, "metadata": meta}


def is_signed(configmap: Manifest, key: bytes) -> bool:
    """True when the object carries the signature `key` gives its name, label and record."""
    annotations = (configmap.get("metadata") or {}).get("annotations") or {}
    given = annotations.get(SIGNATURE_ANNOTATION) if isinstance(annotations, dict) else None
    expected = _signature(key, configmap)
    return isinstance(given, str) and expected is not None and hmac.compare_digest(given, expected)


def verified_records(items: Sequence[Manifest], key: bytes) -> list[StoredRecord]:
    """The readable records among `items`, oldest first, each marked verified or not."""
    signed_uids = {
        str((item.get("metadata") or {}).get("uid") or "")
        for item in items
        if isinstance(item, dict) and is_signed(item, key)
    }
    stored, _ = stored_records(list(items))
    return [replace(s, verified=bool(s.uid) and s.uid in signed_uids) for s in stored]


def verified_listing(items: Sequence[Manifest], key: bytes) -> HistoryListing:
    """The history `items` hold, newest first, with the ids of the unverified records."""
    stored = verified_records(items, key)
    _, unreadable = stored_records(list(items))
    return HistoryListing(
        tuple(history([s.record for s in stored])),
        tuple(unreadable),
        unverified=frozenset(s.record.id for s in stored if not s.verified),
    )


def verified_find(item: Manifest, key: bytes) -> StoredRecord | None:
    """The record one object keeps, marked verified or not (None: not a readable record)."""
    found = read_record(item)
    if not isinstance(found, StoredRecord):
        return None
    return replace(found, verified=is_signed(item, key))


def beyond_verified_retention(
    items: Sequence[Manifest], key: bytes, *, keep: int
) -> list[StoredRecord]:
    """The verified records past the newest `keep` verified ones, oldest first.

    Unverified records are neither counted nor deleted: a flood of forged records dated
    2099 cannot push a genuine record out of the history.
    """
    verified = [s for s in verified_records(items, key) if s.verified]
    excess = len(verified) - max(keep, 1)
    return verified[:excess] if excess > 0 else []
