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
import logging
import secrets
import time
from collections.abc import Callable

from itsdangerous import BadData, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from app.settings import Settings
from app.web.auth.limiter import LoginLimiter
from app.web.auth.principal import AuthRefused, Principal
from app.web.auth.proxies import TrustedProxies
from app.web.auth.revocations import RevokedSessions
from app.web.auth.tokens import bearer_token, same_token

log = logging.getLogger(__name__)

SESSION_COOKIE = "gpu_slots_session"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
TOKEN_USER = "admin"
BEARER_USER = "api-admin"


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
        self.proxies = TrustedProxies(settings.trusted_proxies)

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
        if same_token(bearer_token(authorization), self.settings.secret("admin_token")):
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
        token = self.settings.secret("admin_token") or ""
        digest = hmac.new(self._secret, token.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:16]).decode().rstrip("=")

    def _proxy_user(self, request: Request) -> Principal | None:
        user = request.headers.get(self.settings.proxy_user_header, "").strip()
        if not user or not self.proxies.from_trusted_proxy(request):
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

    def client_address(self, request: Request) -> str:
        """Who is calling (see TrustedProxies.client_address)."""
        return self.proxies.client_address(request)

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
        expected = self.settings.secret("admin_token")
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
            secure=self.proxies.is_https(request),
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
            secure=self.proxies.is_https(request),
        )
