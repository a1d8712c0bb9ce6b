"""A namespace's ResourceQuota on GPU requests, as the API server's quota admission sees it.

A pod whose `requests.nvidia.com/*` would take a quota's used past its hard limit is refused
at creation (`exceeded quota`), whatever node would have it. Quotas limited by scopes
(`spec.scopes`, `spec.scopeSelector`) apply to some pods only and are not judged here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.domain.bounds import READ_ERRORS
from app.domain.quantity import quantity_count

_REQUESTS = "requests."


def quota_reasons(
    quotas: Iterable[Mapping[str, Any]], *, namespace: str, slots: Mapping[str, int]
) -> list[dict[str, str | int]]:
    """The params of each quota `slots` would exceed in `namespace` (none: it passes)."""
    found: list[dict[str, str | int]] = []
    for quota in quotas:
        meta = quota.get("metadata") or {}
        spec = quota.get("spec") or {}
        if meta.get("namespace") != namespace or spec.get("scopes") or spec.get("scopeSelector"):
            continue
        hard = (quota.get("status") or {}).get("hard") or spec.get("hard") or {}
        used = (quota.get("status") or {}).get("used") or {}
        for resource, count in sorted(slots.items()):
            key = _REQUESTS + resource
            if key not in hard:
                continue
            try:
                limit, taken = quantity_count(hard[key]), quantity_count(used.get(key, "0"))
            except READ_ERRORS:
                continue  # the API server stores valid quantities; anything else is not ours
            if taken + count > limit:
                found.append(
                    {
                        "quota": str(meta.get("name", "")),
                        "resource": resource,
                        "requested": count,
                        "used": taken,
                        "hard": limit,
                    }
                )
    return found
