"""The object store: one global resourceVersion counter, an event history, watchers, listeners.

Each stored object keeps its JSON serialisation next to it, so list, get and watch fan-out
join bytes instead of copying and re-encoding dicts. Stored dicts are never mutated: a
write replaces the whole entry.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from app.simulator.apiserver.resources import ResourceType
from app.simulator.apiserver.selectors import Selector

JsonObject = dict[str, Any]


def dumps(obj: Any) -> bytes:
    """Compact JSON, as the API server sends it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored object and its serialisation."""

    obj: JsonObject
    raw: bytes


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write, as watchers and listeners see it."""

    rv: int
    resource: ResourceType
    type: str  # ADDED | MODIFIED | DELETED
    entry: Entry
    old: JsonObject | None


def _key(obj: JsonObject) -> tuple[str, str]:
    """(namespace, name): how the store keys an object, and the order lists come in."""
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def entry_key(entry: Entry) -> tuple[str, str]:
    return _key(entry.obj)


def event_line(event_type: str, raw: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"


@dataclass(eq=False)  # watchers are kept in a set: identity, not value, tells them apart
class Watcher:
    """One open watch stream: filters changes and queues event lines on its event loop."""

    resource: ResourceType
    namespace: str | None
    selector: Selector
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def _matches(self, obj: JsonObject | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.selector.empty or self.selector.matches(obj)

    def line_for(self, change: Change) -> bytes | None:
        """The event this watcher should see for a change, or None."""
        now = self._matches(change.entry.obj)
        if change.type == "DELETED":
            return event_line("DELETED", change.entry.raw) if now else None
        before = self._matches(change.old)
        if now and before:
            return event_line("MODIFIED", change.entry.raw)
        if now:
            return event_line("ADDED", change.entry.raw)
        if before:
            return event_line("DELETED", change.entry.raw)
        return None

    def put(self, line: bytes | None) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, line)
        except RuntimeError:  # the loop is closed: the stream is gone
            self.closed = True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.put(None)


class Gone(Exception):
    """The requested resourceVersion is older than the kept history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")


Listener = Callable[[Change], None]


class Store:
    """All objects of all kinds, guarded by one re-entrant lock."""

    def __init__(self, *, history_size: int = 20_000) -> None:
        self.lock = threading.RLock()
        self._objects: dict[str, dict[tuple[str, str], Entry]] = {}
        self._rv = 1
        self._history: deque[Change] = deque()
        self._history_size = history_size
        self._compacted_rv = 1
        self._watchers: set[Watcher] = set()
        self._listeners: list[Listener] = []
        self._pending: deque[Change] = deque()
        self._dispatching = False
        self.closing = False  # set while the server shuts down: new watches end at once

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_version(self) -> int:
        """Versions before this one are forgotten (watches and list continuations get 410)."""
        return self._compacted_rv

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` after every committed write (serially, never re-entrantly)."""
        self._listeners.append(listener)

    def get(self, resource: ResourceType, namespace: str | None, name: str) -> Entry | None:
        return self._objects.get(resource.kind, {}).get((namespace or "", name))

    def entries(self, resource: ResourceType, namespace: str | None = None) -> list[Entry]:
        with self.lock:
            table = self._objects.get(resource.kind, {})
            if namespace is None:
                return list(table.values())
            return [e for (ns, _), e in table.items() if ns == namespace]

    def objects(self, resource: ResourceType, namespace: str | None = None) -> list[JsonObject]:
        return [e.obj for e in self.entries(resource, namespace)]

    def commit(
        self, resource: ResourceType, event_type: str, obj: JsonObject, old: JsonObject | None
    ) -> Entry:
        """Store (or delete) `obj` under a new resourceVersion and tell watchers and listeners."""
        with self.lock:
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            entry = Entry(obj, dumps(obj))
            table = self._objects.setdefault(resource.kind, {})
            if event_type == "DELETED":
                table.pop(_key(obj), None)
            else:
                table[_key(obj)] = entry
            change = Change(self._rv, resource, event_type, entry, old)
            self._history.append(change)
            while len(self._history) > self._history_size:
                self._compacted_rv = self._history.popleft().rv
            for watcher in list(self._watchers):
                if watcher.resource is resource and not watcher.closed:
                    line = watcher.line_for(change)
                    if line is not None:
                        watcher.put(line)
            self._pending.append(change)
            self._dispatch()
            return entry

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the lock and tell listeners about the writes made inside only at the end."""
        with self.lock:
            if self._dispatching:
                yield
                return
            self._dispatching = True
            try:
                yield
            finally:
                self._dispatching = False
                self._dispatch()

    def _dispatch(self) -> None:
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while self._pending:
                change = self._pending.popleft()
                for listener in self._listeners:
                    listener(change)
        finally:
            self._dispatching = False

    def open_watch(
        self,
        resource: ResourceType,
        namespace: str | None,
        selector: Selector,
        since_rv: int | None,
        loop: asyncio.AbstractEventLoop,
    ) -> tuple[Watcher, list[bytes]]:
        """Register a watcher; return it with the events it missed since `since_rv`.

        `since_rv=None` means "now, starting with the current objects as ADDED events".
        """
        with self.lock:
            watcher = Watcher(resource, namespace, selector, loop)
            backlog: list[bytes] = []
            if since_rv is None:
                for entry in self.entries(resource, namespace):
                    if selector.empty or selector.matches(entry.obj):
                        backlog.append(event_line("ADDED", entry.raw))
            else:
                if since_rv < self._compacted_rv:
                    raise Gone(since_rv, self._compacted_rv)
                for change in self._history:
                    if change.rv > since_rv and change.resource is resource:
                        line = watcher.line_for(change)
                        if line is not None:
                            backlog.append(line)
            if self.closing:
                watcher.close()
            else:
                self._watchers.add(watcher)
            return watcher, backlog

    def close_watch(self, watcher: Watcher) -> None:
        with self.lock:
            self._watchers.discard(watcher)
            watcher.closed = True

    def expire_history(self) -> None:
        """Forget every past event: a watch from any earlier resourceVersion gets 410 Gone."""
        with self.lock:
            self._history.clear()
            self._rv += 1  # a fresh list answers a newer version than any client holds
            self._compacted_rv = self._rv

    def drop_watches(self) -> int:
        """End every open watch stream; return how many were open."""
        with self.lock:
            watchers = list(self._watchers)
            self._watchers.clear()
        for watcher in watchers:
            watcher.close()
        return len(watchers)

    def load(self, changes: Iterable[tuple[ResourceType, JsonObject]]) -> None:
        """Commit prepared objects as ADDED (scenario loading)."""
        for resource, obj in changes:
            self.commit(resource, "ADDED", obj, None)
