"""Replacing a DaemonSet that its controller keeps touching: only a real edit is a conflict.

The DaemonSet controller rewrites `status` whenever a pod on any node changes, and every
write moves `metadata.resourceVersion`; a replace made with the version read a moment
before then answers 409 although nobody changed what we are about to change (seen on the
real control plane, tests/real). A 409 is retried with the fresh version when the object
is still the one we read: same uid, generation, labels and annotations.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from app.domain.cluster import Manifest
from app.errors import ConflictError

ATTEMPTS = 3


def same_object(fresh: Manifest, seen: Manifest) -> bool:
    """Nothing but status (and so resourceVersion) moved since `seen` was read."""
    now, then = fresh.get("metadata") or {}, seen.get("metadata") or {}
    return all(now.get(k) == then.get(k) for k in ("uid", "generation", "labels", "annotations"))


def replace_despite_status_writes(
    replace: Callable[[Manifest], Manifest | None],
    read: Callable[[], Manifest | None],
    body: Manifest,
    *,
    seen: Manifest,
) -> Manifest | None:
    """`replace(body)`; on a 409 that only a status write caused, again with its version."""
    for attempt in range(ATTEMPTS):
        try:
            return replace(body)
        except ConflictError:
            fresh = read()
            if attempt == ATTEMPTS - 1 or fresh is None or not same_object(fresh, seen):
                raise
            body = copy.deepcopy(body)
            body.setdefault("metadata", {})["resourceVersion"] = fresh["metadata"].get(
                "resourceVersion"
            )
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
