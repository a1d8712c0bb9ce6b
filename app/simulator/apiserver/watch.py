"""`?watch=true`: a stream of event lines from a resourceVersion (or the current objects)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from app.simulator.apiserver import resources as res
from app.simulator.apiserver.errors import ApiError, bad_request
from app.simulator.apiserver.registry import Registry
from app.simulator.apiserver.selectors import Selector
from app.simulator.apiserver.store import Gone, Store, Watcher, dumps
from app.simulator.apiserver.tables import table_event, wants_table
from app.simulator.apiserver.targets import Target, is_true

JSON = "application/json"
DEFAULT_WATCH_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class WatchParams:
    """What a watch request asks for."""

    selector: Selector
    since_rv: int | None  # None: start with the current objects as ADDED events
    timeout_s: float
    initial_events: bool


def watch_params(query: QueryParams, target: Target) -> WatchParams:
    """The selector (a named watch selects its name), start version and timeout of a watch."""
    selector = Selector.parse(query.get("labelSelector"), query.get("fieldSelector"))
    if target.name is not None:
        selector = Selector(
            selector.labels,
            (*selector.fields, *Selector.parse(None, f"metadata.name={target.name}").fields),
        )
    rv_text = query.get("resourceVersion") or ""
    # Watch-list (kubectl 1.35's informers): the current objects as ADDED events, then a
    # BOOKMARK marking the end of the initial events, then changes.
    initial_events = is_true(query.get("sendInitialEvents"))
    try:
        since_rv = None if rv_text in ("", "0") or initial_events else int(rv_text)
    except ValueError as exc:
        raise bad_request(f"invalid resourceVersion: {rv_text!r}") from exc
    try:
        timeout_s = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
    except ValueError as exc:
        raise bad_request("invalid timeoutSeconds") from exc
    return WatchParams(selector, since_rv, timeout_s, initial_events)


def _initial_events_end(resource: res.ResourceType, rv: int) -> bytes:
    marker = {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        "metadata": {
            "resourceVersion": str(rv),
            "annotations": {"k8s.io/initial-events-end": "true"},
        },
    }
    return dumps({"type": "BOOKMARK", "object": marker}) + b"\n"


async def _events(
    store: Store,
    watcher: Watcher,
    backlog: Sequence[bytes],
    *,
    timeout_s: float,
    shaped: Callable[[bytes, bool], bytes],
) -> AsyncIterator[bytes]:
    """The backlog, then each change until the timeout or the watch closes."""
    loop = asyncio.get_running_loop()
    first = True
    try:
        for queued in backlog:
            yield shaped(queued, first)
            first = False
        deadline = loop.time() + timeout_s
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            try:
                async with asyncio.timeout(remaining):
                    event = await watcher.queue.get()
            except TimeoutError:
                return
            if event is None:
                return
            yield shaped(event, first)
            first = False
    finally:
        store.close_watch(watcher)


def watch_response(registry: Registry, request: Request, target: Target) -> Response:
    """The streaming answer to a watch (one ERROR line when the version is too old)."""
    params = watch_params(request.query_params, target)
    store = registry.store
    try:
        with store.lock:
            watcher, backlog = store.open_watch(
                target.resource,
                target.namespace,
                params.selector,
                params.since_rv,
                asyncio.get_running_loop(),
            )
            opened_rv = store.resource_version
    except Gone as gone:
        status = ApiError("Expired", str(gone), code=410).status()
        line = dumps({"type": "ERROR", "object": status}) + b"\n"
        return StreamingResponse(iter([line]), media_type=JSON)
    if params.initial_events:
        backlog = [*backlog, _initial_events_end(target.resource, opened_rv)]
    as_table = wants_table(request.headers.get("accept", ""))

    def shaped(line: bytes, first: bool) -> bytes:
        if not as_table:
            return line
        kind = target.resource.kind
        return table_event(kind, line, now=registry.clock(), with_columns=first)

    events = _events(store, watcher, backlog, timeout_s=params.timeout_s, shaped=shaped)
    return StreamingResponse(events, media_type=JSON)
