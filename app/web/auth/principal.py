"""Who is calling (`Principal`, `Admin`) and why a write is refused (`AuthRefused`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Method = Literal["session", "bearer", "proxy"]


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    user: str
    groups: tuple[str, ...]
    method: Method
    is_admin: bool
    csrf: str | None = None  # the token forms must echo (ambient methods only)
    session_id: str | None = None

    @property
    def impersonate(self) -> bool:
        """Proxy users write as themselves, so the cluster's RBAC has the last word."""
        return self.method == "proxy"

    @property
    def needs_csrf(self) -> bool:
        return self.method != "bearer"


@dataclass(frozen=True)
class Admin:
    """An admin making a change, and how the change history names them.

    `forced`: the change is applied blind, without a preview's token, because the request
    asked for it (`?force=true`); its record and audit line say so.
    """

    principal: Principal
    user: str
    forced: bool = False


class AuthRefused(Exception):
    """A write is refused; `status_code` is 401, 403 or 429."""

    def __init__(self, status_code: int, message: str, *, retry_after_s: int | None = None):
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.retry_after_s = retry_after_s
