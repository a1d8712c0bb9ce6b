"""Every route of an app, through included routers (FastAPI keeps them nested)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Route


def _walk(routes: Iterable[BaseRoute], prefix: str) -> Iterator[tuple[str, BaseRoute]]:
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            context = getattr(route, "include_context", None)
            yield from _walk(included.routes, prefix + getattr(context, "prefix", ""))
        elif isinstance(route, Route):
            yield prefix + route.path, route
        else:
            yield prefix + getattr(route, "path", ""), route


def all_routes(app: FastAPI) -> list[tuple[str, BaseRoute]]:
    """(path, route) for every route the app answers, mounts included."""
    return list(_walk(app.routes, ""))


def api_routes(app: FastAPI) -> list[tuple[str, APIRoute]]:
    return [(path, route) for path, route in all_routes(app) if isinstance(route, APIRoute)]
