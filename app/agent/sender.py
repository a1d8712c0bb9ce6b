"""Delivery of one report to the dashboard: POST, classify the answer, back-off policy.

With several dashboard replicas behind a headless Service the report goes to every
address of the dashboard's name (`app.replicas`); it counts as delivered once every
replica has it. A replica that already accepted this report is not sent it again when the
others are retried.

The poster never retries by itself; the loop decides when to try again, so a newer
report can replace one still waiting. 4xx answers other than 429 are permanent: the
token, the size or the schema is wrong, and sending the same thing again cannot help.
"""

from __future__ import annotations

import json
import random
import ssl
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.domain.report import AgentReport
from app.errors import ConfigError
from app.replicas import Resolver, Target, resolve_all, targets

REPORTS_PATH = "/api/v1/agent/reports"
_DETAIL_MAX_CHARS = 500


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one POST went: delivered, worth retrying, or refused for good."""

    delivered: bool
    retry: bool
    detail: str
    status: int | None = None
    retry_after_s: float | None = None


class TokenFile:
    """The agent token, re-read on every send: projected tokens and Secrets rotate."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._last: str | None = None

    def read(self) -> str:
        """The token (first line, stripped); the last good one if the file vanished."""
        try:
            token = self._path.read_text(encoding="utf-8").strip().splitlines()
        except OSError as exc:
            if self._last is not None:
                return self._last
            raise ConfigError(f"cannot read token file {self._path}: {exc.strerror}") from exc
        if not token or not token[0].strip():
            raise ConfigError(f"token file {self._path} is empty")
        self._last = token[0].strip()
        return self._last


def tls_verify(*, ca_file: Path | None, insecure: bool) -> ssl.SSLContext | bool:
    """httpx's `verify`: on by default, with a CA bundle when given, off only when asked."""
    if insecure:
        return False
    if ca_file is None:
        return True
    try:
        return ssl.create_default_context(cafile=str(ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load CA file {ca_file}: {exc}") from exc


class ReportPoster:
    """POSTs a report as JSON with the bearer token to every replica; one Outcome for all."""

    def __init__(
        self,
        *,
        dashboard_url: str,
        token: TokenFile,
        client: httpx.Client,
        resolve: Resolver = resolve_all,
    ) -> None:
        self._url = dashboard_url.rstrip("/") + REPORTS_PATH
        self._token = token
        self._client = client
        self._resolve = resolve
        self._accepted: tuple[object, set[str]] = (None, set())  # report date, addresses

    @property
    def url(self) -> str:
        return self._url

    def post(self, report: AgentReport) -> Outcome:
        """One attempt at every replica not yet holding `report`; never raises."""
        body = report.model_dump(mode="json", by_alias=True)
        try:
            headers = {"Authorization": f"Bearer {self._token.read()}"}
        except ConfigError as exc:
            return Outcome(delivered=False, retry=False, detail=str(exc))
        if self._accepted[0] != report.collected_at:
            self._accepted = (report.collected_at, set())
        accepted = self._accepted[1]
        everyone = targets(self._url, self._resolve)
        outcomes = [
            (target, self._post_one(target, body, headers))
            for target in everyone
            if target.address not in accepted
        ]
        accepted.update(target.address for target, outcome in outcomes if outcome.delivered)
        return combine(outcomes, replicas=len(everyone))

    def _post_one(self, target: Target, body: object, headers: dict[str, str]) -> Outcome:
        extensions = {"sni_hostname": target.sni} if target.sni else None
        if target.host_header:
            headers = {**headers, "Host": target.host_header}
        try:
            response = self._client.post(
                target.url, json=body, headers=headers, extensions=extensions
            )
        except httpx.TimeoutException as exc:
            return Outcome(delivered=False, retry=True, detail=f"timed out: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return Outcome(delivered=False, retry=True, detail=f"cannot reach dashboard: {exc}")
        return classify(response)


def combine(outcomes: list[tuple[Target, Outcome]], *, replicas: int) -> Outcome:
    """One Outcome for a fan-out: delivered when every replica took it; retried when one
    failed for a passing reason; refused for good only when none can take it."""
    if len(outcomes) == 1 and replicas == 1:
        return outcomes[0][1]
    failed = [(target, outcome) for target, outcome in outcomes if not outcome.delivered]
    if not failed:
        status = outcomes[0][1].status if outcomes else None
        return Outcome(
            delivered=True, retry=False, detail=f"accepted by {replicas} replicas", status=status
        )
    target, first = failed[0]
    took = replicas - len(failed)
    detail = f"{took} of {replicas} replicas accepted; {target.address}: {first.detail}"
    retrying = [outcome for _, outcome in failed if outcome.retry]
    if retrying:
        waits = [o.retry_after_s for o in retrying if o.retry_after_s is not None]
        return Outcome(
            delivered=False,
            retry=True,
            detail=detail,
            status=retrying[0].status,
            retry_after_s=max(waits) if waits else None,
        )
    return Outcome(delivered=False, retry=False, detail=detail, status=first.status)


def classify(response: httpx.Response) -> Outcome:
    """The Outcome of a dashboard answer."""
    status = response.status_code
    if 200 <= status < 300:
        return Outcome(delivered=True, retry=False, detail="accepted", status=status)
    detail = _explain(status, _body_message(response))
    if status == 429 or status >= 500 or status == 408:
        return Outcome(
            delivered=False,
            retry=True,
            detail=detail,
            status=status,
            retry_after_s=_retry_after_s(response.headers.get("Retry-After")),
        )
    return Outcome(delivered=False, retry=False, detail=detail, status=status)


def backoff_delay_s(failures: int, *, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Exponential back-off with jitter: half fixed, half random, never above `cap_s`."""
    ceiling = min(cap_s, base_s * 2.0 ** max(0, failures - 1))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def _explain(status: int, message: str) -> str:
    reasons = {
        401: "dashboard refused the token (wrong or missing agent token)",
        403: "dashboard refused the report: this token is for another node (check --node)",
        404: "dashboard has no report endpoint at this URL (wrong --dashboard?)",
        409: "dashboard holds a newer report of this node (clock skew, or two agents per node?)",
        413: "report too large for the dashboard",
        422: "dashboard rejected the report (schema mismatch between agent and dashboard)",
        429: "dashboard is rate-limiting reports",
    }
    reason = reasons.get(status, f"dashboard answered HTTP {status}")
    return f"{reason}: {message}" if message else reason


def _body_message(response: httpx.Response) -> str:
    """The dashboard's own words: FastAPI's `detail`, else the start of the body."""
    try:
        text = response.text
    except (UnicodeDecodeError, httpx.HTTPError):
        return ""
    try:
        payload = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:_DETAIL_MAX_CHARS]
    if isinstance(payload, dict) and "detail" in payload:
        payload = payload["detail"]
    message = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return message[:_DETAIL_MAX_CHARS]


def _retry_after_s(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
