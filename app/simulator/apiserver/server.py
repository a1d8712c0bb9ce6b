"""The Kubernetes REST API over HTTP (Starlette): discovery, CRUD, patch, list and watch."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from app.simulator.apiserver import openapi, paging
from app.simulator.apiserver import resources as res
from app.simulator.apiserver.errors import ApiError, bad_request
from app.simulator.apiserver.faults import Faults
from app.simulator.apiserver.pod_log import LogSource, pod_log_text
from app.simulator.apiserver.protobuf import ProtobufError, decode_body
from app.simulator.apiserver.registry import Registry
from app.simulator.apiserver.selectors import Selector
from app.simulator.apiserver.store import Gone, JsonObject, dumps
from app.simulator.apiserver.tables import table, table_event, wants_table

log = logging.getLogger(__name__)

JSON = "application/json"
DEFAULT_WATCH_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    resource: res.ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def json_response(body: Any, status_code: int = 200) -> Response:
    raw = body if isinstance(body, bytes) else dumps(body)
    return Response(raw, status_code=status_code, media_type=JSON)


def error_response(error: ApiError) -> Response:
    return json_response(error.status(), error.code)


def _parse_target(group: str, version: str, parts: Sequence[str]) -> Target:
    def resource_for(plural: str) -> res.ResourceType:
        found = res.find_resource(group, plural, version)
        if found is None:
            raise ApiError("NotFound", "the server could not find the requested resource")
        return found

    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] != "status":
        namespace = parts[1]
        resource = resource_for(parts[2])
        if not resource.namespaced:
            raise ApiError("NotFound", "the server could not find the requested resource")
        name = parts[3] if len(parts) > 3 else None
        sub = parts[4] if len(parts) > 4 else None
        if len(parts) > 5:
            raise ApiError("NotFound", "the server could not find the requested resource")
        return Target(resource, namespace, name, sub)
    if not parts or len(parts) > 3:
        raise ApiError("NotFound", "the server could not find the requested resource")
    resource = resource_for(parts[0])
    name = parts[1] if len(parts) > 1 else None
    sub = parts[2] if len(parts) > 2 else None
    if resource.namespaced and name is not None:
        raise ApiError("NotFound", "the server could not find the requested resource")
    return Target(resource, None, name, sub)


def _verb(method: str, target: Target, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if target.name is not None else "list"
    return {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if target.name is not None else "deletecollection",
    }.get(method, method.lower())


def _is_true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return None
    content_type = request.headers.get("content-type", JSON)
    if "protobuf" in content_type:
        try:
            return decode_body(raw)
        except ProtobufError as exc:
            raise ApiError(
                "UnsupportedMediaType", f"the protobuf body could not be read: {exc}"
            ) from exc
    if "yaml" in content_type:
        raise ApiError(
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {JSON}",
        )
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from exc


class KubeApi:
    """Request handling for everything under /api, /apis and the discovery endpoints."""

    def __init__(
        self, registry: Registry, faults: Faults, *, logs: LogSource | None = None
    ) -> None:
        self.registry = registry
        self.faults = faults
        self.logs = logs
        self.pager = paging.Pager()

    async def handle(self, request: Request) -> Response:
        try:
            response = await self._handle(request)
            if response.status_code >= 400:
                return response
            lost = self.faults.lost_answer(request.method, request.url.path)
            if lost is not None:
                raise ApiError.for_code(lost, "injected fault: the write was made, its answer lost")
            return response
        except ApiError as error:
            return error_response(error)
        except Exception:  # a simulator bug must still answer like a server
            log.exception("simulator: internal error on %s %s", request.method, request.url)
            return error_response(ApiError("InternalError", "internal error in the simulator"))

    async def _handle(self, request: Request) -> Response:
        path = request.url.path.rstrip("/") or "/"
        if self.faults.unavailable:
            self.faults.record(request.method.lower(), "Unavailable")
            raise ApiError(
                "ServiceUnavailable", "the server is currently unable to handle the request"
            )
        if path.startswith("/openapi/"):
            return json_response(openapi.document_for(path, request.headers.get("accept", "")))
        discovery = self._discovery(path)
        if discovery is not None:
            code = self.faults.record("get", "Discovery")
            if code is not None:
                raise ApiError.for_code(code, "injected fault")
            return json_response(discovery)
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            target = _parse_target("", "v1", parts[2:])
        elif len(parts) >= 3 and parts[0] == "apis":
            target = _parse_target(parts[1], parts[2], parts[3:])
        else:
            raise ApiError("NotFound", "the server could not find the requested resource")
        if target.subresource == "log" and target.resource is res.POD:
            return self._pod_log(target, request)
        if target.subresource not in (None, "status") or (
            target.subresource == "status" and not target.resource.has_status
        ):
            raise ApiError("NotFound", "the server could not find the requested resource")
        query = request.query_params
        watch = _is_true(query.get("watch"))
        verb = _verb(request.method, target, watch)
        code = self.faults.record(verb, target.resource.kind)
        if code is not None:
            raise ApiError.for_code(code, f"injected fault for {verb} {target.resource.kind}")
        dry_run = "All" in query.getlist("dryRun")
        strict = query.get("fieldValidation") == "Strict"
        as_table = wants_table(request.headers.get("accept", ""))
        if verb == "get":
            assert target.name is not None
            entry = self.registry.get(target.resource, target.namespace, target.name)
            if as_table and target.subresource is None:
                printed = self._table(
                    target, [entry.obj], int(entry.obj["metadata"]["resourceVersion"])
                )
                if printed is not None:
                    return printed
            return json_response(entry.raw)
        if verb == "list":
            return self._list(target, query, as_table=as_table)
        if verb == "watch":
            return self._watch(request, target)
        if verb == "create" and target.name is None:
            body = await _json_body(request)
            if strict:
                openapi.check_fields(target.resource.kind, body)
            obj = self.registry.create(target.resource, target.namespace, body, dry_run=dry_run)
            return json_response(obj, 201)
        if verb == "update" and target.name is not None:
            body = await _json_body(request)
            if strict:
                openapi.check_fields(target.resource.kind, body)
            obj = self.registry.replace(
                target.resource,
                target.namespace,
                target.name,
                body,
                subresource=target.subresource,
                dry_run=dry_run,
            )
            return json_response(obj)
        if verb == "patch" and target.name is not None:
            body = await _json_body(request)
            if strict:
                openapi.check_fields(target.resource.kind, body)
            obj = self.registry.patch(
                target.resource,
                target.namespace,
                target.name,
                request.headers.get("content-type", ""),
                body,
                subresource=target.subresource,
                dry_run=dry_run,
            )
            return json_response(obj)
        if verb == "delete" and target.name is not None and target.subresource is None:
            options = await _json_body(request) or {}
            if "All" in (options.get("dryRun") or []):
                dry_run = True
            obj = self.registry.delete(
                target.resource,
                target.namespace,
                target.name,
                dry_run=dry_run,
                preconditions=options.get("preconditions"),
            )
            return json_response(obj)
        raise ApiError("MethodNotAllowed", f"the server does not allow this method on {path}")

    def _discovery(self, path: str) -> dict[str, Any] | None:
        if path == "/version":
            return dict(res.SERVER_VERSION)
        if path == "/api":
            return res.api_versions()
        if path == "/apis":
            return res.api_group_list()
        if path == "/api/v1":
            return res.api_resource_list("", "v1")
        parts = path.split("/")[1:]
        if len(parts) == 2 and parts[0] == "apis":
            return res.api_group(parts[1])
        if len(parts) == 3 and parts[0] == "apis":
            return res.api_resource_list(parts[1], parts[2])
        return None

    def _pod_log(self, target: Target, request: Request) -> Response:
        """`kubectl logs`: what the pod's container printed (plain text)."""
        assert target.namespace is not None
        if request.method != "GET" or target.name is None:
            raise ApiError("MethodNotAllowed", "only GET is allowed on pods/log")
        self.faults.record("get", "Pod")
        pod = self.registry.get(res.POD, target.namespace, target.name).obj
        text = pod_log_text(
            pod,
            container=request.query_params.get("container"),
            tail_lines=request.query_params.get("tailLines"),
            source=self.logs,
        )
        return Response(text, media_type="text/plain")

    def _table(self, target: Target, objects: list[JsonObject], rv: int) -> Response | None:
        printed = table(target.resource.kind, objects, rv, now=self.registry.clock())
        return None if printed is None else json_response(printed)

    def _list(self, target: Target, query: QueryParams, *, as_table: bool = False) -> Response:
        if target.name is not None:
            raise ApiError("MethodNotAllowed", "list on a named object")
        labels, fields = query.get("labelSelector"), query.get("fieldSelector")
        selector = Selector.parse(labels, fields)
        token = query.get("continue")
        if token and query.get("resourceVersion"):
            raise bad_request("specifying resource version is not allowed when using continue")
        page = self.pager.page(
            f"{target.resource.kind}|{target.namespace or ''}|{labels or ''}|{fields or ''}",
            paging.parse_limit(query.get("limit")),
            token,
            current=lambda: self.registry.list(target.resource, target.namespace, selector),
            current_rv=self.registry.store.resource_version,
            compacted_rv=self.registry.store.compacted_version,
        )
        meta = paging.list_meta(page, counted=selector.empty)
        if as_table:
            objects = [e.obj for e in page.entries]
            printed = table(target.resource.kind, objects, page.rv, now=self.registry.clock())
            if printed is not None:
                printed["metadata"] = meta
                return json_response(printed)
        head = (
            b'{"kind":"'
            + target.resource.list_kind.encode()
            + b'","apiVersion":"'
            + target.resource.api_version.encode()
            + b'","metadata":'
            + dumps(meta)
            + b',"items":['
        )
        return json_response(head + b",".join(e.raw for e in page.entries) + b"]}")

    def _watch(self, request: Request, target: Target) -> Response:
        query = request.query_params
        selector = Selector.parse(query.get("labelSelector"), query.get("fieldSelector"))
        if target.name is not None:
            selector = Selector(
                selector.labels,
                (*selector.fields, *Selector.parse(None, f"metadata.name={target.name}").fields),
            )
        rv_text = query.get("resourceVersion") or ""
        # Watch-list (kubectl 1.35's informers): the current objects as ADDED events, then a
        # BOOKMARK marking the end of the initial events, then changes.
        initial_events = _is_true(query.get("sendInitialEvents"))
        try:
            since_rv = None if rv_text in ("", "0") or initial_events else int(rv_text)
        except ValueError as exc:
            raise bad_request(f"invalid resourceVersion: {rv_text!r}") from exc
        try:
            timeout_s = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
        except ValueError as exc:
            raise bad_request("invalid timeoutSeconds") from exc
        store = self.registry.store
        loop = asyncio.get_running_loop()
        try:
            with store.lock:
                watcher, backlog = store.open_watch(
                    target.resource, target.namespace, selector, since_rv, loop
                )
                opened_rv = store.resource_version
        except Gone as gone:
            status = ApiError("Expired", str(gone), code=410).status()
            line = dumps({"type": "ERROR", "object": status}) + b"\n"
            return StreamingResponse(iter([line]), media_type=JSON)

        if initial_events:
            backlog = [*backlog, _initial_events_end(target.resource, opened_rv)]
        as_table = wants_table(request.headers.get("accept", ""))
        now = self.registry.clock

        def shaped(line: bytes, first: bool) -> bytes:
            if not as_table:
                return line
            return table_event(target.resource.kind, line, now=now(), with_columns=first)

        async def events() -> AsyncIterator[bytes]:
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

        return StreamingResponse(events(), media_type=JSON)


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


def create_app(
    registry: Registry,
    faults: Faults,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    logs: LogSource | None = None,
) -> Starlette:
    """The ASGI app: the simulator's own `/_sim/` routes first, then the Kubernetes API."""
    api = KubeApi(registry, faults, logs=logs)
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    routes: list[BaseRoute] = [
        *extra_routes,
        Route("/{path:path}", api.handle, methods=methods),
    ]
    return Starlette(routes=routes)
