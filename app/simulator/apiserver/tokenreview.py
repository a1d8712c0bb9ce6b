"""The simulator's ServiceAccount tokens: it issues them to its agents and reviews them.

Real clusters hand an agent pod a projected token (a JWT with an audience and an expiry)
and answer `POST /apis/authentication.k8s.io/v1/tokenreviews` about it. The simulator does
the same with its own signing key, so the dashboard binds simulated agents to their nodes
with the very code it uses against a real API server. Tokens are JWT-shaped (header,
claims, signature); the signature is an HMAC, which only the simulator can check.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

TOKENREVIEWS_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
AGENT_NAMESPACE = "gpu-slots"
AGENT_SERVICE_ACCOUNT = "gpu-slots-agent"
DEFAULT_AUDIENCE = "gpu-slots"


@dataclass(frozen=True)
class TokenSubject:
    """Whom a token speaks for: a ServiceAccount, through one pod on one node."""

    namespace: str
    service_account: str
    pod: str
    pod_uid: str
    node: str | None  # None: like clusters before 1.30, the review names no node


class TokenIssuer:
    """Mints projected-style tokens and answers TokenReviews about them."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self._clock = clock
        self._lock = threading.Lock()
        self._current: dict[str, tuple[str, float]] = {}  # node -> (token, expires at)
        self.reviews = 0

    def issue(self, subject: TokenSubject, *, audience: str, ttl_s: float = 3600.0) -> str:
        now = self._clock()
        claims: dict[str, Any] = {
            "aud": [audience],
            "exp": int(now + ttl_s),
            "iat": int(now),
            "sub": f"system:serviceaccount:{subject.namespace}:{subject.service_account}",
            "kubernetes.io": {
                "namespace": subject.namespace,
                "serviceaccount": {"name": subject.service_account},
                "pod": {"name": subject.pod, "uid": subject.pod_uid},
                **({"node": {"name": subject.node}} if subject.node else {}),
            },
        }
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{header}.{body}.{self._sign(f'{header}.{body}')}"

    def agent_token(self, node: str, *, audience: str = DEFAULT_AUDIENCE) -> str:
        """The current token of the simulated agent pod on `node`, renewed like kubelet does."""
        now = self._clock()
        with self._lock:
            cached = self._current.get(node)
            if cached is not None and cached[1] - now > 600:
                return cached[0]
        subject = TokenSubject(
            AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, f"gpu-slots-agent-{node}", _uid(node), node
        )
        token = self.issue(subject, audience=audience)
        with self._lock:
            self._current[node] = (token, now + 3600.0)
        return token

    def review(self, token: str, audiences: list[str]) -> dict[str, Any]:
        """The `status` of a TokenReview of `token` for `audiences`."""
        self.reviews += 1
        claims = self._claims(token)
        if claims is None:
            return {"authenticated": False, "error": "invalid bearer token"}
        if claims["exp"] <= self._clock():
            return {"authenticated": False, "error": "token has expired"}
        matched = [a for a in audiences if a in claims["aud"]] if audiences else claims["aud"]
        if not matched:
            return {"authenticated": False, "error": "token audiences are invalid"}
        info = claims["kubernetes.io"]
        extra = {
            "authentication.kubernetes.io/pod-name": [info["pod"]["name"]],
            "authentication.kubernetes.io/pod-uid": [info["pod"]["uid"]],
        }
        if "node" in info:
            extra["authentication.kubernetes.io/node-name"] = [info["node"]["name"]]
        return {
            "authenticated": True,
            "audiences": matched,
            "user": {
                "username": claims["sub"],
                "uid": _uid(claims["sub"]),
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{info['namespace']}",
                    "system:authenticated",
                ],
                "extra": extra,
            },
        }

    def _claims(self, token: str) -> dict[str, Any] | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        if not hmac.compare_digest(self._sign(f"{parts[0]}.{parts[1]}"), parts[2]):
            return None
        try:
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except ValueError:
            return None
        return claims if isinstance(claims, dict) else None

    def _sign(self, text: str) -> str:
        return _b64(hmac.new(self._key, text.encode(), hashlib.sha256).digest())

    def routes(self, *, unavailable: Callable[[], bool] = lambda: False) -> list[BaseRoute]:
        """The TokenReview endpoint, to serve before the generic API routes."""

        async def create(request: Request) -> Response:
            if unavailable():
                return _status(503, "ServiceUnavailable", "the server is currently unable")
            try:
                body = await request.json()
                spec = body["spec"]
                token = spec["token"]
                audiences = list(spec.get("audiences") or [])
            except (ValueError, KeyError, TypeError):
                return _status(400, "BadRequest", "TokenReview needs spec.token")
            status = self.review(str(token), [str(a) for a in audiences])
            answer = {
                "kind": "TokenReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": None},
                "spec": {"token": token, "audiences": audiences},
                "status": status,
            }
            return JSONResponse(answer, status_code=201)

        return [Route(TOKENREVIEWS_PATH, create, methods=["POST"])]


def _status(code: int, reason: str, message: str) -> Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    return JSONResponse(body, status_code=code)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _uid(text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
