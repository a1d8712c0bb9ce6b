"""Freshness by meaning: what a change was planned against, and whether that still holds.

A preview hands back a token of the objects it planned from: per object its uid, its
generation and a short hash of each field a plan reads (a DaemonSet's spec fields, labels
and annotations; a ConfigMap's data; a Node's labels). The apply re-reads the objects and
compares: a status write by a controller moves `resourceVersion` but none of these, so it
passes; a spec or data edit by someone else is a conflict that names the field that moved.
One check for every kind of change (mode switch, split, return to shared, rollback).
Pure: manifests in, a token or a refusal out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.domain.bounds import read_json
from app.domain.changes.models import Phrase, PlanRefused, RefusalCode
from app.domain.cluster import Manifest

MAX_TOKEN_CHARS = 16_384
MAX_OBJECTS = 16
TOKEN_DEPTH = 4  # {"objects": {key: {"fields": {path: hash}}}}
_VERSION = 1


@dataclass(frozen=True)
class Fingerprint:
    """What a plan read of one object: identity, generation and a hash per field."""

    uid: str | None
    generation: int | None
    fields: Mapping[str, str]

    def as_json(self) -> dict[str, Any]:
        return {"uid": self.uid, "generation": self.generation, "fields": dict(self.fields)}


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_fields(obj: Manifest) -> dict[str, object]:
    """The fields of `obj` a change plan reads, by path (status and bookkeeping left out).

    A Node's plan reads only its labels: the kubelet and controllers write its annotations
    and status all the time.
    """
    meta = obj.get("metadata") or {}
    fields: dict[str, object] = {"metadata.labels": meta.get("labels") or {}}
    if obj.get("kind") == "Node":
        return fields
    fields["metadata.annotations"] = meta.get("annotations") or {}
    if obj.get("kind") == "ConfigMap" or "data" in obj or "binaryData" in obj:
        fields["data"] = obj.get("data") or {}
        fields["binaryData"] = obj.get("binaryData") or {}
    spec = obj.get("spec")
    if isinstance(spec, dict):
        fields.update({f"spec.{key}": value for key, value in spec.items()})
    return fields


def fingerprint(obj: Manifest) -> Fingerprint:
    meta = obj.get("metadata") or {}
    generation = meta.get("generation")
    return Fingerprint(
        uid=str(meta["uid"]) if meta.get("uid") else None,
        generation=int(generation) if isinstance(generation, int) else None,
        fields={path: _digest(value) for path, value in sorted(read_fields(obj).items())},
    )


def freshness_token(objects: Mapping[str, Manifest | None]) -> str:
    """The token of what a plan was made from; `objects` keyed by "kind/name" (None: absent)."""
    body = {
        "v": _VERSION,
        "objects": {
            key: (fingerprint(obj).as_json() if obj is not None else None)
            for key, obj in sorted(objects.items())
        },
    }
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _bad(reason: str) -> PlanRefused:
    """A token no preview handed out; `reason` (a code) says what is wrong with it."""
    return PlanRefused(RefusalCode.BAD_TOKEN, f"bad-token.{reason}", max=MAX_TOKEN_CHARS)


def parse_token(token: str) -> dict[str, Fingerprint | None]:
    """The fingerprints a token holds; PlanRefused(BAD_TOKEN) saying what is wrong."""
    if len(token) > MAX_TOKEN_CHARS:
        raise _bad("too-long")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = read_json(raw, max_depth=TOKEN_DEPTH)
    except (binascii.Error, ValueError) as exc:  # JsonRefused is a ValueError
        raise _bad("not-base64-json") from exc
    if not isinstance(body, dict) or body.get("v") != _VERSION:
        raise _bad("unknown-version")
    objects = body.get("objects")
    if not isinstance(objects, dict) or len(objects) > MAX_OBJECTS:
        raise _bad("no-objects")
    parsed: dict[str, Fingerprint | None] = {}
    for key, value in objects.items():
        parsed[str(key)] = None if value is None else _fingerprint_of(value)
    return parsed


def _fingerprint_of(value: object) -> Fingerprint:
    if not isinstance(value, dict) or not isinstance(value.get("fields"), dict):
        raise _bad("no-fields")
    generation = value.get("generation")
    if generation is not None and not isinstance(generation, int):
        raise _bad("bad-generation")
    uid = value.get("uid")
    return Fingerprint(
        uid=str(uid) if uid is not None else None,
        generation=generation,
        fields={str(k): str(v) for k, v in value["fields"].items()},
    )


def moved(key: str, then: Fingerprint | None, now: Manifest | None) -> Phrase | None:
    """What moved in object `key` since `then` was taken; None: nothing that counts."""
    if then is None:
        return None if now is None else Phrase("created", {"key": key})
    if now is None:
        return Phrase("deleted", {"key": key})
    current = fingerprint(now)
    if current.uid != then.uid:
        return Phrase("recreated", {"key": key, "then": then.uid, "now": current.uid})
    fields = set(then.fields) | set(current.fields)
    paths = sorted(p for p in fields if then.fields.get(p) != current.fields.get(p))
    if not paths and current.generation == then.generation:
        return None
    changed = {"key": key, "paths": ", ".join(paths) or "spec"}
    if current.generation != then.generation:
        generations = {"then": then.generation, "now": current.generation}
        return Phrase("changed-generation", {**changed, **generations})
    return Phrase("changed", changed)


def check_fresh(token: str, objects: Mapping[str, Manifest | None]) -> None:
    """PlanRefused(STALE) naming what moved when `objects` differ in meaning from `token`.

    `objects` are the ones the apply re-read, keyed as at preview. Each kind of change reads a
    fixed set of objects (a mode change 2, a node's split 5, absent ones as None), so a token
    naming another set is another change's preview, never a freshness check of this one:
    PlanRefused(BAD_TOKEN), whichever set holds more.
    """
    then = parse_token(token)
    if set(then) != set(objects):
        raise _bad("other-change")
    changes = [
        reason
        for key in sorted(objects)
        if (reason := moved(key, then[key], objects[key])) is not None
    ]
    if changes:
        raise PlanRefused(RefusalCode.STALE, "changed-since-preview", changes=tuple(changes))
