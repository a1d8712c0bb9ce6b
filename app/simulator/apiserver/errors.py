"""Kubernetes-shaped errors: an exception that renders as a `Status` object."""

from __future__ import annotations

from typing import Any

_REASON_CODES = {
    "BadRequest": 400,
    "Unauthorized": 401,
    "Forbidden": 403,
    "NotFound": 404,
    "MethodNotAllowed": 405,
    "NotAcceptable": 406,
    "AlreadyExists": 409,
    "Conflict": 409,
    "Gone": 410,
    "UnsupportedMediaType": 415,
    "Invalid": 422,
    "TooManyRequests": 429,
    "InternalError": 500,
    "ServiceUnavailable": 503,
    "Timeout": 504,
}

_CODE_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class ApiError(Exception):
    """A failed API call; `status()` is the body the real API server would send."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        code: int | None = None,
        kind: str | None = None,
        name: str | None = None,
        group: str = "",
        causes: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.code = code if code is not None else _REASON_CODES.get(reason, 500)
        self.kind = kind
        self.name = name
        self.group = group
        self.causes = causes or []

    @classmethod
    def for_code(cls, code: int, message: str) -> ApiError:
        return cls(_CODE_REASONS.get(code, "InternalError"), message, code=code)

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.kind is not None:
            details["kind"] = self.kind
            if self.group:
                details["group"] = self.group
        if self.causes:
            details["causes"] = self.causes
        if details:
            body["details"] = details
        return body


def not_found(plural: str, name: str, *, group: str = "") -> ApiError:
    qualified = f"{plural}.{group}" if group else plural
    return ApiError(
        "NotFound", f'{qualified} "{name}" not found', kind=plural, name=name, group=group
    )


def already_exists(plural: str, name: str, *, group: str = "") -> ApiError:
    qualified = f"{plural}.{group}" if group else plural
    return ApiError(
        "AlreadyExists",
        f'{qualified} "{name}" already exists',
        kind=plural,
        name=name,
        group=group,
    )


def conflict(plural: str, name: str, *, group: str = "") -> ApiError:
    qualified = f"{plural}.{group}" if group else plural
    return ApiError(
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        kind=plural,
        name=name,
        group=group,
    )


def invalid(kind: str, name: str, field: str, detail: str, *, group: str = "") -> ApiError:
    return ApiError(
        "Invalid",
        f'{kind} "{name}" is invalid: {field}: {detail}',
        kind=kind,
        name=name,
        group=group,
        causes=[{"reason": "FieldValueInvalid", "message": detail, "field": field}],
    )


def bad_request(message: str) -> ApiError:
    return ApiError("BadRequest", message)
