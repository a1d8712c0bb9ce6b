"""Whether a bearer token could be a projected ServiceAccount token, checked locally.

Only a token that could pass is sent to the TokenReview API: 100 garbage `x.y.N` tokens made
100 reviews. A ServiceAccount token is a JWT (three base64url parts, a JSON header with a
signing algorithm, a JSON payload) whose `sub` is the ServiceAccount, whose `aud` holds the
audience asked for and whose `exp` lies ahead. The signature is the API server's to check;
these claims are only read here to refuse, never to accept.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

MAX_TOKEN_CHARS = 16 * 1024  # a projected token is about 1 KiB
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_PART = re.compile(r"^[A-Za-z0-9_-]+$")


def _decoded(part: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, binascii.Error, RecursionError):
        return None


def jwt_refusal(token: str, *, audience: str, account: str | None, now: float) -> str | None:
    """Why `token` cannot be the agents' ServiceAccount token; None when it could be."""
    if len(token) > MAX_TOKEN_CHARS:
        return f"longer than {MAX_TOKEN_CHARS} characters"
    parts = token.split(".")
    if len(parts) != 3 or not all(_PART.match(p) for p in parts):
        return "not a JWT"
    header, claims = _decoded(parts[0]), _decoded(parts[1])
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return "not a JWT"
    if not isinstance(header.get("alg"), str) or header["alg"].lower() == "none":
        return "an unsigned JWT"
    if account is not None and claims.get("sub") != SERVICE_ACCOUNT_PREFIX + account:
        return "not a token of the agents' ServiceAccount"
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if audience not in audiences:
        return f"not for the audience {audience!r}"
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now:
        return "expired"
    return None
