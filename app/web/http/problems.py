"""Error bodies: always `{"detail": "<a sentence a person can act on>"}`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


def describe_errors(prefix: str, errors: Sequence[Any], *, shown: int = 5) -> str:
    """`prefix: where: what; ...` for pydantic/FastAPI validation errors."""
    parts = []
    for error in errors[:shown]:
        where = ".".join(str(part) for part in error.get("loc", ())) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    more = f" (and {len(errors) - shown} more)" if len(errors) > shown else ""
    return f"{prefix}: " + "; ".join(parts) + more


def add_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"detail": describe_errors("Invalid request", exc.errors())}, status_code=422
        )
