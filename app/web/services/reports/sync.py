"""Replicas that agree: a starting replica gathers every node's latest report first.

Agents post each report to every replica (app.agent.sender, through the chart's headless
Service), so running replicas hold the same reports. A replica that starts (a restart, an
upgrade, a scale-up) has none: it asks its peers for theirs (`GET /api/v1/peer/reports`,
app.web.routes.peers, authenticated by a token derived from the shared session secret) and is
ready once one of them answered. When no peer answers (the only replica, or every replica
restarted at once), it waits one report interval (`GEO_MLOPS_REPORT_WAIT_S`, the agents'
interval) so every agent has reported once. `/readyz` says which of the two happened.
A peer that is itself still gathering reports answers 503 and is not counted.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import httpx
from pydantic import BaseModel, ValidationError

from app.clock import utc_now
from app.domain.report import ReceivedReport
from app.replicas import Resolver, resolve_all, targets
from app.settings import Settings
from app.web.services.background import BackgroundLoop
from app.web.services.reports.intake import too_far_ahead
from app.web.services.reports.store import ReportStore

log = logging.getLogger(__name__)

PEER_PATH = "/api/v1/peer/reports"
PEER_TIMEOUT = httpx.Timeout(10.0, connect=2.0)


class PeerReportsOut(BaseModel):
    reports: list[ReceivedReport]


def peer_token(settings: Settings) -> str | None:
    """What replicas send each other: an HMAC of the shared session secret (None: unset)."""
    secret = settings.session_secret
    if not secret:
        return None
    return hmac.new(secret.encode(), b"gpu-slots peer reports v1", hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SyncState:
    done: bool
    how: str  # for /readyz: where this replica's reports came from, or what it waits for


class ReportSync:
    """Fills a starting replica's report store from its peers, else waits one interval."""

    def __init__(
        self,
        settings: Settings,
        reports: ReportStore,
        *,
        snapshot_ready: Callable[[], bool],
        on_copied: Callable[[], None] = lambda: None,
        resolve: Resolver = resolve_all,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._wall_clock = wall_clock
        self._peers = [url.strip() for url in settings.peers.split(",") if url.strip()]
        self._own = settings.pod_ip
        self._wait_s = settings.report_wait_s
        self._token = peer_token(settings)
        self._reports = reports
        self._snapshot_ready = snapshot_ready
        self._on_copied = on_copied
        self._resolve = resolve
        self._clock = clock
        self._started = clock()
        self._loop = BackgroundLoop("peer-sync", self._run)
        self._state = SyncState(False, "waiting for the first snapshot")
        if not self._peers and self._wait_s <= 0:
            self._state = SyncState(True, "no peers configured and no report wait")

    def state(self) -> SyncState:
        return self._state

    def start(self) -> None:
        if self._state.done:
            return
        self._started = self._clock()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _run(self) -> None:
        while not self._snapshot_ready():  # reports of nodes the cache does not know yet
            if self._loop.stopping.wait(0.05):  # would be kept only in the bounded unknown space
                return
        if self._peers:
            self._state = SyncState(False, "asking peers for their reports")
            asked, answered, copied = self._ask_peers()
            if answered:
                self._on_copied()
                self._state = SyncState(
                    True,
                    f"reports from peers: {answered} of {asked} answered, {copied} reports",
                )
                log.info("reports copied from peers", extra={"peers": answered, "reports": copied})
                return
            why = f"no peer answered ({asked} asked)"
        else:
            why = "no peers configured"
        wait_s = self._wait_s
        self._state = SyncState(False, f"{why}; waiting one report interval ({wait_s:g} s)")
        if self._loop.stopping.wait(max(0.0, self._started + wait_s - self._clock())):
            return
        self._state = SyncState(
            True, f"{why}; waited one report interval ({wait_s:g} s) for the agents"
        )

    def _ask_peers(self) -> tuple[int, int, int]:
        """(peers asked, peers that answered, reports stored)."""
        everyone = [t for url in self._peers for t in targets(url + PEER_PATH, self._resolve)]
        others = [t for t in everyone if t.address != self._own]
        answered = copied = 0
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        with httpx.Client(timeout=PEER_TIMEOUT) as client:
            for target in others:
                if target.host_header:
                    headers["Host"] = target.host_header
                try:
                    response = client.get(
                        target.url,
                        headers=headers,
                        extensions={"sni_hostname": target.sni} if target.sni else None,
                    )
                    if response.status_code != 200:
                        log.info(
                            "peer did not give its reports",
                            extra={"peer": target.address, "status": response.status_code},
                        )
                        continue
                    body = PeerReportsOut.model_validate_json(response.content)
                except (httpx.HTTPError, ValidationError) as exc:
                    log.info(
                        "peer unreachable", extra={"peer": target.address, "error": str(exc)[:200]}
                    )
                    continue
                answered += 1
                copied += self._copy(body.reports, peer=target.address)
        return len(others), answered, copied

    def _copy(self, reports: list[ReceivedReport], *, peer: str) -> int:
        """Store a peer's reports under the agents' own rules; the number stored.

        The same bounds (the model) and the same time rule as an agent's report: a copy dated
        ahead of this replica's clock is refused (it would outrank the real agent's reports,
        which then got 409), and a received_at in the future is taken as now.
        """
        copied = 0
        for received in reports:
            now = self._wall_clock()
            refused = too_far_ahead(received.report, now=now)
            if refused is not None:
                log.warning(
                    "a peer's report refused",
                    extra={"peer": peer, "node": received.report.node, "reason": refused},
                )
                continue
            received_at = min(received.received_at, now)
            outcome = self._reports.accept(received.report, received_at=received_at)
            copied += outcome.value in ("stored", "renewed")
        return copied
