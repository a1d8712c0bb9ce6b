"""Who may write: the admin session cookie, the admin bearer token, a trusted auth proxy; CSRF.

Three ways to be an admin, checked in this order:
- `Authorization: Bearer <admin token>` (API clients; no cookie involved, so no CSRF);
- user/group headers set by an auth proxy, honoured only from `trusted_proxies` addresses,
  admin when in `admin_group`; writes then impersonate that user in Kubernetes;
- a signed session cookie from logging in with the admin token (HttpOnly, SameSite=Strict,
  Secure over https, expiring).
Cookie and proxy identities are ambient (the browser sends them by itself), so every write
they make must carry the CSRF token: a form field, or the X-CSRF-Token header.

A correct admin token is never refused: failed attempts of an address only lock out wrong
tokens (behind an ingress every caller shares one address, and nobody must be able to lock
the admins out). Sessions carry a fingerprint of the admin token, so changing the token
ends them; a logout is remembered across restarts (app.web.auth.revocations).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from fastapi import HTTPException, Request, Response, status
from itsdangerous import BadData, URLSafeTimedSerializer

from app.settings import Settings
from app.web.auth.revocations import RevokedSessions
from app.web.auth.tokens import bearer_token, same_token

log = logging.getLogger(__name__)

SESSION_COOKIE = "gpu_slots_session"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
LOGIN_FAILURES_ALLOWED = 5
LOGIN_WINDOW_S = 60.0
TOKEN_USER = "admin"
BEARER_USER = "api-admin"
_MAX_TRACKED_CLIENTS = 10_000

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


class AuthRefused(Exception):
    """A write is refused; `status_code` is 401, 403 or 429."""

    def __init__(self, status_code: int, message: str, *, retry_after_s: int | None = None):
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.retry_after_s = retry_after_s

    def as_http(self) -> HTTPException:
        headers: dict[str, str] = {}
        if self.status_code == status.HTTP_401_UNAUTHORIZED:
            headers["WWW-Authenticate"] = "Bearer"
        if self.retry_after_s is not None:
            headers["Retry-After"] = str(self.retry_after_s)
        return HTTPException(self.status_code, self.message, headers=headers or None)


@dataclass
class LoginLimiter:
    """Failed logins per client address in a sliding window."""

    allowed: int = LOGIN_FAILURES_ALLOWED
    window_s: float = LOGIN_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def retry_after_s(self, client: str) -> int | None:
        """Seconds until `client` may try again, or None when it may now."""
        now = self.clock()
        failures = self._prune(client, now)
        if len(failures) < self.allowed:
            return None
        return max(1, int(failures[0] + self.window_s - now + 0.999))

    def fail(self, client: str) -> None:
        now = self.clock()
        if len(self._failures) >= _MAX_TRACKED_CLIENTS:
            for key in list(self._failures):
                self._prune(key, now)
            while len(self._failures) >= _MAX_TRACKED_CLIENTS:
                self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(client, deque()).append(now)

    def succeed(self, client: str) -> None:
        self._failures.pop(client, None)

    def _prune(self, client: str, now: float) -> deque[float]:
        failures = self._failures.get(client, deque())
        while failures and failures[0] <= now - self.window_s:
            failures.popleft()
        if not failures:
            self._failures.pop(client, None)
        return failures


class AuthState:
    """Per-app secrets and counters: the session signer, the login limiter, revoked sessions."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        secret = settings.session_secret
        if not secret:
            secret = secrets.token_urlsafe(32)
            log.warning(
                "GEO_MLOPS_SESSION_SECRET is not set: using a random secret for this process; "
                "admin sessions end when it restarts and do not work across replicas"
            )
        self.settings = settings
        self._sessions = URLSafeTimedSerializer(secret, salt="gpu-slots.session")
        self._proxy_csrf = URLSafeTimedSerializer(secret, salt="gpu-slots.proxy-csrf")
        self.max_age_s = settings.session_max_age_s
        self.limiter = LoginLimiter(clock=clock)
        self._secret = secret.encode()
        self._wall_clock = wall_clock
        self.revoked = RevokedSessions(settings.session_revocations_file, clock=wall_clock)
        self._proxies = [ipaddress.ip_network(c, strict=False) for c in settings.trusted_proxies]

    # identifying the caller ------------------------------------------------------------

    def identify(self, request: Request, *, for_write: bool = True) -> Principal | None:
        """The caller, or None.

        For a write, a wrong bearer token is refused and counts as a failed login; for a
        read it is only not an identity (Prometheus or another client may send its own).
        """
        authorization = request.headers.get("authorization")
        if authorization:
            return self._bearer(request, authorization, for_write=for_write)
        proxied = self._proxy_user(request)
        if proxied is not None:
            return proxied
        return self._session(request)

    def _bearer(self, request: Request, authorization: str, *, for_write: bool) -> Principal | None:
        if same_token(bearer_token(authorization), self.settings.read_admin_token()):
            return Principal(BEARER_USER, (), "bearer", is_admin=True)
        if not for_write:
            return None
        client = self.client_address(request)
        wait_s = self.limiter.retry_after_s(client)
        if wait_s is not None:
            raise AuthRefused(429, "Too many failed logins; try again later.", retry_after_s=wait_s)
        self.limiter.fail(client)
        log.warning("admin API call refused: wrong bearer token", extra={"client": client})
        raise AuthRefused(401, "Wrong admin token (Authorization: Bearer <admin token>).")

    def token_fingerprint(self) -> str:
        """A keyed digest of the current admin token: sessions made with another one end."""
        token = self.settings.read_admin_token() or ""
        digest = hmac.new(self._secret, token.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:16]).decode().rstrip("=")

    def _proxy_user(self, request: Request) -> Principal | None:
        user = request.headers.get(self.settings.proxy_user_header, "").strip()
        if not user or not self.from_trusted_proxy(request):
            return None
        raw_groups = request.headers.get(self.settings.proxy_groups_header, "")
        groups = tuple(g.strip() for g in raw_groups.split(",") if g.strip())
        admin_group = self.settings.admin_group
        return Principal(
            user,
            groups,
            "proxy",
            is_admin=bool(admin_group) and admin_group in groups,
            csrf=self._proxy_csrf.dumps(user),
        )

    def _session(self, request: Request) -> Principal | None:
        cookie = request.cookies.get(SESSION_COOKIE)
        if not cookie:
            return None
        try:
            data = self._sessions.loads(cookie, max_age=self.max_age_s)
        except BadData:
            return None
        if not isinstance(data, dict):
            return None
        csrf, sid, fingerprint = data.get("csrf"), data.get("sid"), data.get("fp")
        if not all(isinstance(value, str) for value in (csrf, sid, fingerprint)):
            return None
        assert isinstance(csrf, str) and isinstance(sid, str) and isinstance(fingerprint, str)
        if not hmac.compare_digest(fingerprint, self.token_fingerprint()) or sid in self.revoked:
            return None
        return Principal(TOKEN_USER, (), "session", is_admin=True, csrf=csrf, session_id=sid)

    def from_trusted_proxy(self, request: Request) -> bool:
        """Whether the connection itself comes from a `trusted_proxies` address."""
        return self._trusted(request.client.host if request.client else "")

    def _trusted(self, address: str) -> bool:
        try:
            peer = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        return any(peer in network for network in self._proxies)

    def client_address(self, request: Request) -> str:
        """Who is calling: the peer, or behind trusted proxies the address they were called from.

        `X-Forwarded-For` is read right to left and only while each hop is a trusted proxy;
        from anyone else (loopback included, unless configured) it is ignored.
        """
        peer = request.client.host if request.client else "unknown"
        if not self._trusted(peer):
            return peer
        hops = [hop.strip() for hop in request.headers.get("x-forwarded-for", "").split(",")]
        for hop in reversed([hop for hop in hops if hop]):
            if not self._trusted(hop):
                return hop[:64]
        return peer

    # checks ----------------------------------------------------------------------------

    def csrf_valid(self, principal: Principal, supplied: str | None) -> bool:
        if not principal.needs_csrf:
            return True
        if not supplied or principal.csrf is None:
            return False
        if principal.method == "proxy":
            try:
                user = self._proxy_csrf.loads(supplied, max_age=self.max_age_s)
            except BadData:
                return False
            return isinstance(user, str) and hmac.compare_digest(user, principal.user)
        return hmac.compare_digest(supplied.encode(), principal.csrf.encode())

    def require_admin(self, request: Request, *, csrf: str | None) -> Principal:
        """The admin making this write, or AuthRefused (401 / 403 / 429)."""
        principal = self.identify(request, for_write=True)
        if principal is None:
            raise AuthRefused(
                401, "Log in as an admin, or send Authorization: Bearer <admin token>."
            )
        if not principal.is_admin:
            group = self.settings.admin_group or "(GEO_MLOPS_ADMIN_GROUP is not set)"
            raise AuthRefused(403, f"{principal.user} is not in the admin group {group}.")
        if not self.csrf_valid(principal, csrf):
            log.warning(
                "write refused: missing or wrong CSRF token",
                extra={"client": self.client_address(request), "user": principal.user},
            )
            raise AuthRefused(403, "Missing or wrong CSRF token; reload the page and try again.")
        return principal

    # logging in and out ----------------------------------------------------------------

    def login(self, request: Request, response: Response, token: str) -> Principal:
        """Check the admin token; on success set the session cookie.

        The right token always logs in; only wrong ones are rate limited per address.
        """
        client = self.client_address(request)
        expected = self.settings.read_admin_token()
        if not expected:
            raise AuthRefused(
                403, "No admin token is configured (GEO_MLOPS_ADMIN_TOKEN or _ADMIN_TOKEN_FILE)."
            )
        if not same_token(token.strip(), expected):
            wait_s = self.limiter.retry_after_s(client)
            if wait_s is not None:
                log.warning("login refused: rate limited", extra={"client": client})
                raise AuthRefused(
                    429, "Too many failed logins; try again later.", retry_after_s=wait_s
                )
            self.limiter.fail(client)
            log.warning("login failed: wrong admin token", extra={"client": client})
            raise AuthRefused(401, "Wrong admin token.")
        sid, csrf = secrets.token_urlsafe(16), secrets.token_urlsafe(32)
        response.set_cookie(
            SESSION_COOKIE,
            self._sessions.dumps({"sid": sid, "csrf": csrf, "fp": self.token_fingerprint()}),
            max_age=self.max_age_s,
            httponly=True,
            samesite="strict",
            secure=self.is_https(request),
            path="/",
        )
        log.info("admin logged in", extra={"client": client})
        return Principal(TOKEN_USER, (), "session", is_admin=True, csrf=csrf, session_id=sid)

    def logout(self, request: Request, response: Response, principal: Principal | None) -> None:
        if principal is not None and principal.session_id:
            self.revoked.revoke(principal.session_id, until=self._wall_clock() + self.max_age_s)
        response.delete_cookie(
            SESSION_COOKIE,
            path="/",
            httponly=True,
            samesite="strict",
            secure=self.is_https(request),
        )

    def is_https(self, request: Request) -> bool:
        if request.url.scheme == "https":
            return True
        forwarded = request.headers.get("x-forwarded-proto", "")
        return forwarded.lower() == "https" and self.from_trusted_proxy(request)


def client_address(request: Request) -> str:
    """The caller's address as the app's AuthState sees it (trusted proxies resolved)."""
    return get_auth(request).client_address(request)


def get_auth(request: Request) -> AuthState:
    """The app's AuthState (made with the app, one per process)."""
    state = request.app.state.runtime.auth
    if not isinstance(state, AuthState):
        raise TypeError("app.state.runtime.auth is not an AuthState")
    return state


def require_admin_api(request: Request) -> Principal:
    """Dependency for JSON writes: bearer token, or an ambient identity plus X-CSRF-Token."""
    auth = get_auth(request)
    try:
        return auth.require_admin(request, csrf=request.headers.get(CSRF_HEADER))
    except AuthRefused as refused:
        raise refused.as_http() from refused
