"""Paged lists (`limit` and `continue`), as the API server serves them.

A list asked with `limit=N` answers at most N items and, while more remain, a
`metadata.continue` token; the next request passes it back as `continue` and gets the
following items of the same list. Every page answers the resourceVersion of the first
one: the pages together are one consistent list at that version, however the objects
changed in between (a client then watches from that version and sees those changes).
Items come in key order (namespace, then name), like etcd's.

The simulator holds the first page's (already sorted) entries for `keep_s` seconds,
the way etcd keeps old versions until compaction: entries are never mutated, so the
held list is the collection as it was. A token whose list is gone is answered 410
Expired, unless nothing changed since (its version is still the current one); so is a
token older than the store's compaction (`Store.expire_history`, as etcd compaction ends
continuations too). A client then lists again from the start, as client-go's reflector does.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from app.simulator.apiserver.errors import ApiError, bad_request
from app.simulator.apiserver.store import Entry, entry_key

KEEP_S = 300.0  # the API server's default etcd compaction interval (5 minutes)
MAX_HELD = 32  # lists held at once; the oldest is forgotten first
TOKEN_VERSION = "meta.k8s.io/v1"

Lister = Callable[[], tuple[list[Entry], int]]


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    rv: int
    token: str | None  # metadata.continue: None on the last page
    remaining: int | None  # metadata.remainingItemCount: items after this page


@dataclass
class _Held:
    entries: list[Entry]  # sorted by entry_key()
    made: float


def parse_limit(text: str | None) -> int:
    """`limit` as a count; 0 (absent, zero or negative) means the whole list."""
    if text is None or text == "":
        return 0
    try:
        return max(int(text), 0)
    except ValueError as exc:
        raise bad_request(f"invalid limit: {text!r} is not an integer") from exc


def _encode(rv: int, start: tuple[str, str]) -> str:
    body = {"v": TOKEN_VERSION, "rv": rv, "start": [start[0], start[1]]}
    raw = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = json.loads(raw)
        rv = body["rv"]
        namespace, name = body["start"]
        if body.get("v") != TOKEN_VERSION or not isinstance(rv, int) or rv <= 0:
            raise ValueError("unknown token version")
        if not isinstance(namespace, str) or not isinstance(name, str):
            raise ValueError("start key is not two strings")
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from exc
    return rv, (namespace, name)


@dataclass(kw_only=True, eq=False)
class Pager:
    """The lists being paged through, keyed by what was listed and at which version."""

    keep_s: float = KEEP_S
    max_held: int = MAX_HELD
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _held: OrderedDict[tuple[str, int], _Held] = field(
        default_factory=OrderedDict, init=False, repr=False
    )

    def page(
        self,
        scope: str,
        limit: int,
        token: str | None,
        *,
        current: Lister,
        current_rv: int,
        compacted_rv: int = 0,
    ) -> Page:
        """One page of the list `scope` names (kind, namespace and selectors).

        `current` lists the collection now (sorted by key); it is called for a first
        page, and for a token whose list was forgotten while nothing changed. A token older
        than `compacted_rv` (the store forgot the versions before it) is expired.
        """
        if not token:
            entries, rv = current()
            if limit <= 0 or len(entries) <= limit:
                return Page(entries, rv, None, None)
            held = _Held(entries, self.clock())
            with self._lock:
                self._forget_old()
                self._held[(scope, rv)] = held
                while len(self._held) > self.max_held:
                    self._held.popitem(last=False)
            return self._slice(held, rv, 0, limit)
        rv, start = _decode(token)
        with self._lock:
            self._forget_old()
            held_or_none = self._held.get((scope, rv)) if rv >= compacted_rv else None
        if held_or_none is None:
            if rv != current_rv or rv < compacted_rv:
                raise ApiError(
                    "Expired",
                    "the list this continue token belongs to is too old to be continued "
                    "consistently; start a new list without the continue parameter",
                    code=410,
                )
            entries, now_rv = current()
            held_or_none = _Held(entries, self.clock())
            rv = now_rv
        held = held_or_none
        return self._slice(held, rv, bisect_left(held.entries, start, key=entry_key), limit)

    def _slice(self, held: _Held, rv: int, begin: int, limit: int) -> Page:
        end = len(held.entries) if limit <= 0 else min(begin + limit, len(held.entries))
        remaining = len(held.entries) - end
        token = _encode(rv, entry_key(held.entries[end])) if remaining > 0 else None
        return Page(held.entries[begin:end], rv, token, remaining if remaining > 0 else None)

    def _forget_old(self) -> None:
        oldest = self.clock() - self.keep_s
        while self._held:
            first = next(iter(self._held.values()))
            if first.made >= oldest:
                return
            self._held.popitem(last=False)


def list_meta(page: Page, *, counted: bool) -> dict[str, str | int]:
    """The list's `metadata`: its version, and the token and count while more remain.

    Like the API server, the remaining count is given only for a list no selector filters.
    """
    meta: dict[str, str | int] = {"resourceVersion": str(page.rv)}
    if page.token is not None:
        meta["continue"] = page.token
        if counted and page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
    return meta
