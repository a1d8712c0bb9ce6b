"""A collection listed in pages (`limit` + `continue`), one page parsed at a time.

client-go's reflector lists pods 500 at a time; so does the cache. Each page is parsed
and handed on before the next is asked for, so at most one page of whole manifests is
held, never a whole 150,000-pod response. (Fetching the next page from a second thread
while one is parsed was tried: at 30,000 pods it was 10 % slower, the two threads
contending for the GIL, so pages are asked for one after another.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

Fetch = Callable[[str | None], bytes]  # the raw body of the page a token names (None: first)


def pages(fetch: Fetch) -> Iterator[dict[str, Any]]:
    """Every page of a list, parsed, in order, until one has no `metadata.continue`."""
    token: str | None = None
    while True:
        body = json.loads(fetch(token))
        metadata = body.get("metadata") if isinstance(body, dict) else None
        token = metadata.get("continue") if isinstance(metadata, dict) else None
        yield body
        del body
        if not token:
            return


def same_version(cached: dict[str, Any], listed: dict[str, Any]) -> bool:
    """The same object at the same resourceVersion (so with the same content)."""
    was, now = cached.get("metadata") or {}, listed.get("metadata") or {}
    version = now.get("resourceVersion")
    same = bool(version) and version == was.get("resourceVersion")
    return same and now.get("uid") == was.get("uid")
