"""One collection mirrored by list+watch: a reflector thread and the store it keeps current.

The reflector lists, then watches from the list's resourceVersion, applies each event to
an in-memory store, and re-lists after a 410 Gone or a broken stream. While the API server
cannot be reached it keeps the last state and says since when it has been failing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from app.clock import utc_now
from app.domain.cluster import Manifest
from app.errors import ForbiddenError
from app.gc_policy import FREEZE_MIN_ITEMS, freeze_listed, freeze_so_far
from app.kube.client import translate
from app.kube.pages import pages, same_version

log = logging.getLogger(__name__)

PAGE_SIZE = 500  # objects per list request (client-go's reflector pages pods by 500 too)
ABSENT_RECHECK_S = 60.0  # how often an optional API that answered 404 is asked again

ListFunc = Callable[..., Any]


@dataclass(frozen=True)
class WatchTarget:
    """One collection to mirror: a name for logs and the client call that lists it."""

    name: str
    list_func: ListFunc
    args: tuple[str, ...] = ()
    field_selector: str | None = None
    optional: bool = False  # a 404 means the API is not served (e.g. no DRA): empty, not an error
    # What to keep of each object, applied as it arrives (app/kube/slim.py for pods).
    transform: Callable[[Manifest], Manifest] | None = None


@dataclass(frozen=True)
class WatchTiming:
    """How every reflector of a cache pages its lists, watches and backs off."""

    watch_timeout_s: int = 300
    retry_delay_s: float = 1.0
    page_size: int = PAGE_SIZE


class Reflector:
    """Mirrors one collection into a dict keyed by namespace/name."""

    def __init__(
        self,
        target: WatchTarget,
        *,
        on_change: Callable[[], None],
        timing: WatchTiming,
        stop: threading.Event,
    ) -> None:
        self.target = target
        self._timing = timing
        self._on_change = on_change
        self._stop = stop
        self._lock = threading.Lock()
        # "namespace/name" -> object, in insertion order: a watch event replaces an object in
        # its place, deletes it or appends it (the engine finds changed pods by that order)
        self._items: dict[str, Manifest] = {}
        # the namespaces asked for by name (the plugin's): their objects, kept as they change
        self._namespaces: dict[str, dict[str, Manifest]] = {}
        self._resource_version = ""
        self.synced = False
        self.failing_since: datetime | None = None
        self.last_error: str | None = None
        self.refused = False
        self.relists = 0
        self.absent = False  # an optional API the server does not serve (404)
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"reflector-{target.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        """Stop watching now: an idle stream would otherwise block until its timeout."""
        current = self._watch
        if current is not None:
            current.stop()
            response = getattr(current, "_resp", None)
            if response is not None:
                with contextlib.suppress(OSError, ValueError):
                    response.shutdown()
        self._thread.join(timeout_s)

    def items(self, namespace: str | None = None) -> list[Manifest]:
        """Every object, or one namespace's without a look at the others (the plugin's pods
        among 300,000: the namespace is indexed from the first time it is asked for)."""
        with self._lock:
            if namespace is None:
                return list(self._items.values())
            named = self._namespaces.get(namespace)
            if named is None:
                named = self._namespaces[namespace] = _in_namespace(self._items, namespace)
            return list(named.values())

    def _run(self) -> None:
        delay_s = self._timing.retry_delay_s
        while not self._stop.is_set():
            try:
                self._list()
                self._mark_ok()
                delay_s = self._timing.retry_delay_s
                self._watch_until_broken()
            except ApiException as exc:
                if exc.status == 410:
                    log.info("watch expired, re-listing", extra={"collection": self.target.name})
                    continue
                if exc.status == 404 and self.target.optional:
                    self._mark_absent()
                    if self._stop.wait(ABSENT_RECHECK_S):
                        return
                    continue
                self._mark_failing(exc)
            except Exception as exc:
                if self._stop.is_set():
                    return
                self._mark_failing(exc)
            if self._stop.wait(delay_s):
                return
            delay_s = min(delay_s * 2, 30.0)

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.target.field_selector:
            kwargs["field_selector"] = self.target.field_selector
        return kwargs

    def _list(self) -> None:
        """List in pages (app/kube/pages.py), keeping each object's transform as it comes.

        Pages bound what is held at once to one page of whole manifests: one response of
        150,000 pods is ~230 MB of JSON, parsed whole before anything is dropped, and the
        allocator keeps that peak as resident memory. Every page answers the first page's
        resourceVersion, so the watch resumes from one consistent list; a 410 for an
        expired continue token propagates and the reflector lists again from the start.

        On a re-list, an object whose resourceVersion did not change keeps the object
        already cached: no second copy while the list comes in, no transform again, and
        the engine (which finds changed pods by identity) sees only what changed.
        """
        keep = self.target.transform
        with self._lock:
            cached = self._items
        items: dict[str, Manifest] = {}
        version = ""
        for body in pages(self._fetch):
            for item in body.get("items") or []:
                key = _key(item)
                same = cached.get(key)
                if same is None or not same_version(same, item):
                    same = keep(item) if keep else item
                items[key] = same
            version = version or (body.get("metadata") or {}).get("resourceVersion", "")
            del body
            if len(items) >= FREEZE_MIN_ITEMS:
                freeze_so_far()
            if self._stop.is_set():
                return  # stopping: an incomplete list is never stored
        with self._lock:
            self._items = items
            self._namespaces = {ns: _in_namespace(items, ns) for ns in self._namespaces}
            self._resource_version = version
        if len(items) >= FREEZE_MIN_ITEMS:
            freeze_listed()
        self.relists += 1
        self.absent = False
        self.synced = True
        self._on_change()

    def _fetch(self, token: str | None) -> bytes:
        paging: dict[str, Any] = {"limit": self._timing.page_size}
        if token:
            paging["_continue"] = token
        response = self.target.list_func(
            *self.target.args,
            _preload_content=False,
            _request_timeout=30,
            **paging,
            **self._kwargs(),
        )
        data: bytes = response.data
        return data

    def _watch_until_broken(self) -> None:
        """Apply watch events until the stream ends; returns to re-watch, raises to re-list."""
        while not self._stop.is_set():
            # Events stay plain dicts (deserialize=False); naming the type skips the client's
            # lookup of a model class, which fails for resource.k8s.io/v1 ResourceClaims.
            self._watch = watch.Watch(return_type=dict)
            for event in self._events(self._watch):
                kind = event.get("type")
                obj = event.get("object")
                if not isinstance(obj, dict):
                    continue
                version = obj.get("metadata", {}).get("resourceVersion")
                if kind == "BOOKMARK":
                    self._resource_version = version or self._resource_version
                    continue
                if kind != "DELETED" and self.target.transform is not None:
                    obj = self.target.transform(obj)
                key = _key(obj)
                with self._lock:
                    named = self._namespaces.get(key.split("/", 1)[0])
                    if kind == "DELETED":
                        self._items.pop(key, None)
                        if named is not None:
                            named.pop(key, None)
                    else:
                        self._items[key] = obj
                        if named is not None:
                            named[key] = obj
                    if version:
                        self._resource_version = version
                self._on_change()
            self._mark_ok()

    def _events(self, stream: watch.Watch) -> Iterator[dict[str, Any]]:
        yield from stream.stream(
            self.target.list_func,
            *self.target.args,
            resource_version=self._resource_version,
            timeout_seconds=self._timing.watch_timeout_s,
            allow_watch_bookmarks=True,
            deserialize=False,
            _request_timeout=self._timing.watch_timeout_s + 30,
            **self._kwargs(),
        )

    def _mark_absent(self) -> None:
        """The server does not serve this optional API: hold nothing, and say so once."""
        if not self.absent:
            log.info("API not served; treated as empty", extra={"collection": self.target.name})
        with self._lock:
            changed = bool(self._items) or not self.synced
            self._items = {}
            self._namespaces = {ns: {} for ns in self._namespaces}
        self.absent = True
        self.synced = True
        self._mark_ok()
        if changed:
            self._on_change()

    def _mark_ok(self) -> None:
        if self.failing_since is not None:
            log.info("API server reachable again", extra={"collection": self.target.name})
        self.failing_since = None
        self.last_error = None
        self.refused = False

    def _mark_failing(self, exc: Exception) -> None:
        error = translate(exc, action=f"watching {self.target.name}")
        self.refused = isinstance(error, ForbiddenError)
        message = str(error)
        if self.failing_since is None:
            self.failing_since = utc_now()
            log.warning("%s", message, extra={"collection": self.target.name})
        self.last_error = message
        self._on_change()


def _in_namespace(items: dict[str, Manifest], namespace: str) -> dict[str, Manifest]:
    prefix = f"{namespace}/"
    return {key: obj for key, obj in items.items() if key.startswith(prefix)}


def _key(obj: Manifest) -> str:
    metadata = obj.get("metadata", {})
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
