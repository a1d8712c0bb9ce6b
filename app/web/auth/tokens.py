"""Bearer tokens: reading `Authorization: Bearer ...` and comparing in constant time."""

from __future__ import annotations

import hmac


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def same_token(supplied: str | None, expected: str | None) -> bool:
    """Constant-time equality; False when either side is missing."""
    if not supplied or not expected:
        return False
    return hmac.compare_digest(supplied.encode(), expected.encode())


def bearer_matches(authorization: str | None, expected: str | None) -> bool:
    """Constant-time check of an `Authorization: Bearer <token>` header."""
    return same_token(bearer_token(authorization), expected)
