"""Which node an agent may report for, from the token it sends.

- `serviceaccount`: a projected ServiceAccount token with the dashboard's audience, checked
  with the TokenReview API; it must belong to the agents' ServiceAccount, and binds the
  agent to the node of its pod.
- `node-token`: a per-node token derived from a secret (app.node_tokens), for agents
  running as a host service.
- `shared-token`: the one agent token of old, valid for every node; only when the admin
  lists it in GEO_MLOPS_AGENT_AUTH.

Reviews are cached per token for a minute (and never past the token's expiry), so a
thousand agents reporting every 15 s cost the API server about 17 reviews a second at most.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from app.errors import ClusterError
from app.kube.tokenreview import SERVICE_ACCOUNT_PREFIX, ReviewedToken
from app.node_tokens import PREFIX as NODE_TOKEN_PREFIX
from app.node_tokens import node_of_token
from app.settings import Settings
from app.web.auth.jwt_shape import jwt_refusal
from app.web.auth.tokens import same_token

log = logging.getLogger(__name__)

REVIEW_WORKERS = 4  # TokenReviews at once, in their own threads (not the page-serving pool)
MAX_PENDING_REVIEWS = 64  # running or waiting; one more is answered 503 at once
REVIEW_TTL_S = 60.0
REFUSAL_TTL_S = 10.0  # a refused token is not sent to the API server again this soon
MAX_CACHED = 8192


class TokenReviewer(Protocol):
    def review(self, token: str, *, audience: str) -> ReviewedToken: ...

    def pod_node(self, namespace: str, name: str, *, uid: str | None) -> str | None: ...


@dataclass(frozen=True)
class AgentIdentity:
    """An authenticated agent; `node` None means any node (the shared token)."""

    method: str
    subject: str
    node: str | None


class AgentRefused(Exception):
    """The token proves nothing (401), or the API server could not be asked (503)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


class AgentAuth:
    """Turns an agent's bearer token into an AgentIdentity (a TokenReview blocks: `review`)."""

    def __init__(
        self,
        settings: Settings,
        *,
        reviewer: TokenReviewer | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._reviewer = reviewer
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[AgentIdentity | AgentRefused, float]] = {}
        self.reviews = 0  # TokenReview calls made (tests and metrics)
        self._pool: ThreadPoolExecutor | None = None  # made on the first review
        self._pending = 0
        if not self.usable_methods():
            log.warning(
                "no agent can authenticate: GEO_MLOPS_AGENT_AUTH=%s, but its methods lack "
                "their settings (AGENT_SERVICE_ACCOUNT, AGENT_NODE_SECRET, AGENT_TOKEN)",
                settings.agent_auth,
            )

    def usable_methods(self) -> list[str]:
        """The configured methods that have what they need."""
        settings = self.settings
        ready = {
            "serviceaccount": self._reviewer is not None
            and settings.agent_service_account is not None,
            "node-token": settings.has_secret("agent_node_secret"),
            "shared-token": settings.has_secret("agent_token"),
        }
        return sorted(m for m in settings.agent_methods if ready[m])

    def authenticate(self, token: str | None) -> AgentIdentity:
        found = self.without_review(token)
        if found is not None:
            return found
        assert token is not None  # without_review refuses a missing one
        return self.review(token)

    def without_review(self, token: str | None) -> AgentIdentity | None:
        """The agent behind `token` when no TokenReview is needed (an HMAC, or a compare
        with a secret from the environment or a mounted Secret): never blocks on the API
        server. None: only a TokenReview can tell (a JWT-shaped token while ServiceAccount
        tokens are accepted; see `review`). Raises AgentRefused for a token no method takes.
        """
        if not token:
            raise AgentRefused(401, "Missing agent token (Authorization: Bearer <token>).")
        methods = self.settings.agent_methods
        if "node-token" in methods and token.startswith(NODE_TOKEN_PREFIX):
            secret = self.settings.secret("agent_node_secret")
            node = node_of_token(secret, token) if secret else None
            if node is not None:
                return AgentIdentity("node-token", f"node-token:{node}", node)
        if "shared-token" in methods and same_token(token, self.settings.secret("agent_token")):
            return AgentIdentity("shared-token", "shared-token", None)
        if "serviceaccount" in methods and self._reviewer is not None:
            why = jwt_refusal(
                token,
                audience=self.settings.agent_token_audience,
                account=self.settings.agent_service_account,
                now=time.time(),
            )
            if why is None:
                return None
            raise AgentRefused(401, f"Wrong agent token: {why}.")
        raise AgentRefused(401, "Wrong agent token (Authorization: Bearer <token>).")

    async def review_in_pool(self, token: str) -> AgentIdentity:
        """`review` in the reviews' own bounded pool, apart from the pool that serves pages.

        With the API server frozen, pages waited 8.8 s behind token reviews in the shared
        pool; now at most REVIEW_WORKERS reviews run and MAX_PENDING_REVIEWS wait, and one
        more is answered 503 at once.
        """
        with self._lock:
            if self._pending >= MAX_PENDING_REVIEWS:
                raise AgentRefused(503, "Too many agent tokens are being checked; retry later.")
            self._pending += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(REVIEW_WORKERS, thread_name_prefix="token-review")
            pool = self._pool
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, self.review, token)
        finally:
            with self._lock:
                self._pending -= 1

    def review(self, token: str) -> AgentIdentity:
        """A ServiceAccount token, by TokenReview (cached; blocking: call from a thread)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            if isinstance(cached[0], AgentRefused):
                raise AgentRefused(cached[0].status_code, cached[0].message)
            return cached[0]
        outcome: AgentIdentity | AgentRefused
        try:
            outcome = self._review(token)
            ttl_s = min(REVIEW_TTL_S, _seconds_left(token))
        except AgentRefused as refused:
            if refused.status_code != 401:
                raise  # the API server could not be asked: ask again next time
            outcome, ttl_s = refused, REFUSAL_TTL_S
        self._remember(key, outcome, now=now, ttl_s=ttl_s)
        if isinstance(outcome, AgentRefused):
            raise AgentRefused(outcome.status_code, outcome.message)
        return outcome

    def _remember(
        self, key: str, outcome: AgentIdentity | AgentRefused, *, now: float, ttl_s: float
    ) -> None:
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                for stale in [k for k, (_, until) in self._cache.items() if until <= now]:
                    del self._cache[stale]
                while len(self._cache) >= MAX_CACHED:
                    del self._cache[next(iter(self._cache))]
            self._cache[key] = (outcome, now + ttl_s)

    def _review(self, token: str) -> AgentIdentity:
        assert self._reviewer is not None
        audience = self.settings.agent_token_audience
        expected = self.settings.agent_service_account
        try:
            self.reviews += 1
            reviewed = self._reviewer.review(token, audience=audience)
            if not reviewed.authenticated:
                raise AgentRefused(401, "The API server did not accept the agent token.")
            if audience not in reviewed.audiences:
                raise AgentRefused(401, f"The agent token is not for the audience {audience!r}.")
            account = SERVICE_ACCOUNT_PREFIX + (expected or "")
            if expected is None or reviewed.username != account:
                raise AgentRefused(
                    401,
                    f"{reviewed.username or 'This token'} is not the agents' ServiceAccount "
                    "(GEO_MLOPS_AGENT_SERVICE_ACCOUNT).",
                )
            node = reviewed.node
            if node is None and reviewed.pod and reviewed.namespace:
                node = self._reviewer.pod_node(
                    reviewed.namespace, reviewed.pod, uid=reviewed.pod_uid
                )
        except ClusterError as error:
            log.warning("agent token review failed: %s", error)
            raise AgentRefused(503, f"Cannot check the agent token now: {error}") from error
        if node is None:
            raise AgentRefused(401, "The agent token is not bound to a pod on a node.")
        return AgentIdentity("serviceaccount", reviewed.username, node)


def _seconds_left(token: str) -> float:
    """Seconds until the JWT's `exp` (already verified by the API server); the TTL if none."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        expires = float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return REVIEW_TTL_S
    return max(0.0, expires - time.time())
