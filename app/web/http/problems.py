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


def malformed_json(errors: Sequence[Any], document: object) -> str | None:
    """The detail "malformed JSON at line L column C" when the body is not JSON (None: it is).

    FastAPI reports the decoder's offset into the body (`body.<offset>`); a person needs the
    line and column (1-based), as an editor shows them.
    """
    for error in errors:
        if error.get("type") != "json_invalid":
            continue
        loc: Sequence[Any] = error.get("loc") or ()
        offset = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else 0
        text = document if isinstance(document, str) else ""
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        return f"malformed JSON at line {line} column {column}"
    return None


def add_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        detail = malformed_json(errors, exc.body) or describe_errors("Invalid request", errors)
        return JSONResponse({"detail": detail}, status_code=422)
