"""The Kubernetes REST API over HTTP (Starlette): discovery, CRUD, patch, list and watch."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.simulator.apiserver import openapi, paging
from app.simulator.apiserver import resources as res
from app.simulator.apiserver.errors import ApiError, bad_request
from app.simulator.apiserver.faults import Faults
from app.simulator.apiserver.pod_log import LogSource, pod_log_text
from app.simulator.apiserver.protobuf import ProtobufError, decode_body
from app.simulator.apiserver.registry import Registry
from app.simulator.apiserver.selectors import Selector
from app.simulator.apiserver.store import JsonObject, dumps
from app.simulator.apiserver.tables import table, wants_table
from app.simulator.apiserver.targets import (
    Target,
    discovery,
    is_true,
    not_found,
    target_of,
    verb_of,
)
from app.simulator.apiserver.watch import JSON, watch_response

log = logging.getLogger(__name__)


def json_response(body: Any, status_code: int = 200) -> Response:
    raw = body if isinstance(body, bytes) else dumps(body)
    return Response(raw, status_code=status_code, media_type=JSON)


def error_response(error: ApiError) -> Response:
    return json_response(error.status(), error.code)


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


def _served_subresource(target: Target) -> bool:
    """The main resource, or `/status` of a kind that has one."""
    if target.subresource is None:
        return True
    return target.subresource == "status" and target.resource.has_status


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
        document = discovery(path)
        if document is not None:
            code = self.faults.record("get", "Discovery")
            if code is not None:
                raise ApiError.for_code(code, "injected fault")
            return json_response(document)
        target = target_of(path)
        if target.subresource == "log" and target.resource is res.POD:
            return self._pod_log(target, request)
        if not _served_subresource(target):
            raise not_found()
        verb = verb_of(request.method, target, is_true(request.query_params.get("watch")))
        code = self.faults.record(verb, target.resource.kind)
        if code is not None:
            raise ApiError.for_code(code, f"injected fault for {verb} {target.resource.kind}")
        await self.faults.wait_at_gate(verb, target.resource.kind)
        if verb in ("get", "list", "watch"):
            return self._read(verb, target, request)
        return await self._write(verb, target, request, path)

    # reads ---------------------------------------------------------------------------------

    def _read(self, verb: str, target: Target, request: Request) -> Response:
        as_table = wants_table(request.headers.get("accept", ""))
        if verb == "watch":
            return watch_response(self.registry, request, target)
        if verb == "list":
            return self._list(target, request.query_params, as_table=as_table)
        assert target.name is not None
        entry = self.registry.get(target.resource, target.namespace, target.name)
        if as_table and target.subresource is None:
            printed = self._table(
                target, [entry.obj], int(entry.obj["metadata"]["resourceVersion"])
            )
            if printed is not None:
                return printed
        return json_response(entry.raw)

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

    # writes --------------------------------------------------------------------------------

    async def _write(self, verb: str, target: Target, request: Request, path: str) -> Response:
        query = request.query_params
        dry_run = "All" in query.getlist("dryRun")
        named = target.name is not None
        if verb == "delete" and named and target.subresource is None:
            return await self._delete(target, request, dry_run=dry_run)
        if (verb == "create" and not named) or (verb in ("update", "patch") and named):
            body = await _json_body(request)
            if query.get("fieldValidation") == "Strict":
                openapi.check_fields(target.resource.kind, body)
            if verb == "create":
                obj = self.registry.create(target.resource, target.namespace, body, dry_run=dry_run)
                return json_response(obj, 201)
            return json_response(self._update(verb, target, request, body, dry_run=dry_run))
        raise ApiError("MethodNotAllowed", f"the server does not allow this method on {path}")

    def _update(
        self, verb: str, target: Target, request: Request, body: Any, *, dry_run: bool
    ) -> JsonObject:
        """PUT (replace) or PATCH of a named object or its `/status`."""
        assert target.name is not None
        if verb == "update":
            return self.registry.replace(
                target.resource,
                target.namespace,
                target.name,
                body,
                subresource=target.subresource,
                dry_run=dry_run,
            )
        return self.registry.patch(
            target.resource,
            target.namespace,
            target.name,
            request.headers.get("content-type", ""),
            body,
            subresource=target.subresource,
            dry_run=dry_run,
        )

    async def _delete(self, target: Target, request: Request, *, dry_run: bool) -> Response:
        assert target.name is not None
        options = await _json_body(request) or {}
        if options:  # as kube-apiserver: options in the body replace the query's, dryRun too
            dry_run = "All" in (options.get("dryRun") or [])
        obj = self.registry.delete(
            target.resource,
            target.namespace,
            target.name,
            dry_run=dry_run,
            preconditions=options.get("preconditions"),
        )
        return json_response(obj)


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
