"""An agent's report, from its bytes to the store: the rules every report passes.

The route (app.web.routes.agent_api) authenticates the agent and reads the body; the rules
live here, without FastAPI: the size cap (GEO_MLOPS_MAX_REPORT_BYTES, checked on the
declared length before reading and on the bytes read), the schema, the node the agent's
token is for, the date (a report dated ahead of the dashboard's clock would outrank every
true one), and the store's own rule (an older or repeated report never replaces a newer
one). A report that passes with new readings asks the snapshot side for a build at once
(`on_stored`). A report that only renews its agent (the same readings, newer times: every
agent of a quiet cluster) asks for none: it changes no figure, only the agent's age and
`collected_at`, and builds are the dashboard's biggest cost. The periodic refresh build
takes it in, and the snapshot loop builds at the moment an agent turns stale
(`ReportStore.next_stale_at`), the one time a renewal's absence shows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from typing import Any

from pydantic import AwareDatetime, TypeAdapter, ValidationError

from app.domain.report import MAX_CLOCK_SKEW, AgentReport, seconds_ahead
from app.errors import GpuSlotsError
from app.web.services.reports.digest import Cut, cut_time
from app.web.services.reports.store import Outcome, ReportStore

log = logging.getLogger(__name__)
_COLLECTED_AT: TypeAdapter[datetime] = TypeAdapter(AwareDatetime)  # AgentReport.collected_at's type


class ReportRefused(GpuSlotsError):
    """A report the dashboard does not store: the HTTP status and the sentence to answer.

    `errors` holds the schema's complaints (pydantic's list) when the body did not match.
    """

    def __init__(self, status_code: int, message: str, *, errors: list[Any] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.errors = errors


def too_far_ahead(report: AgentReport, *, now: datetime) -> str | None:
    """Why `collected_at` cannot be accepted at `now` (too far in the future), or None."""
    ahead_s = seconds_ahead(report, now=now)
    if ahead_s is None:
        return None
    limit_s = int(MAX_CLOCK_SKEW.total_seconds())
    return (
        f"collected_at is {ahead_s} s ahead of the dashboard's clock (at most {limit_s} s "
        "allowed); check the node's clock (NTP)"
    )


@dataclass(frozen=True)
class Intake:
    """What became of a report the rules let through."""

    node: str
    outcome: Outcome = field(default=Outcome.STORED)


class ReportIntake:
    """Checks an agent's report against every intake rule and stores it."""

    def __init__(
        self,
        store: ReportStore,
        *,
        max_bytes: int,
        clock: Callable[[], datetime],
        on_stored: Callable[[], None],
    ) -> None:
        self._store = store
        self.max_bytes = max_bytes
        self._clock = clock
        self._on_stored = on_stored

    def check_declared(self, content_length: str | None) -> None:
        """Refuse a body whose declared length is over the cap, before reading it."""
        if content_length is not None and content_length.isdigit():
            self.check_size(int(content_length))

    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise ReportRefused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"Report larger than {self.max_bytes} bytes (GEO_MLOPS_MAX_REPORT_BYTES).",
            )

    def take(self, body: bytes, *, token_node: str | None, client: str) -> Intake:
        """Decode, check and store one report; raises ReportRefused with the answer."""
        self.check_size(len(body))
        cut = cut_time(body)
        report = self._renewal(cut) if cut is not None else None
        if report is None:
            try:
                report = AgentReport.model_validate_json(body)
            except ValidationError as exc:
                raise ReportRefused(
                    HTTPStatus.UNPROCESSABLE_ENTITY, "Invalid report", errors=exc.errors()
                ) from exc
        if token_node is not None and token_node != report.node:
            log.warning(
                "agent report refused: token of another node",
                extra={"client": client, "node": report.node, "token_node": token_node},
            )
            raise ReportRefused(
                HTTPStatus.FORBIDDEN,
                f"This agent's token is for node {token_node!r}, not {report.node!r}.",
            )
        now = self._clock()
        ahead = too_far_ahead(report, now=now)
        if ahead is not None:
            raise ReportRefused(HTTPStatus.UNPROCESSABLE_ENTITY, f"Invalid report: {ahead}.")
        digest = cut.digest if cut is not None else None
        outcome = self._store.accept(report, received_at=now, digest=digest)
        if outcome is Outcome.OUT_OF_ORDER:
            raise ReportRefused(
                HTTPStatus.CONFLICT,
                f"A newer report of node {report.node!r} is already stored; this one is ignored.",
            )
        if outcome is Outcome.STORED:
            self._on_stored()
        return Intake(node=report.node, outcome=outcome)

    def _renewal(self, cut: Cut) -> AgentReport | None:
        """The stored report with the new time, when the body is the stored one's but for
        its time (the time is validated as the model does); else None: decode it whole."""
        stored = self._store.posted_as(cut.digest)
        if stored is None:
            return None
        try:
            collected_at = _COLLECTED_AT.validate_json(b'"' + cut.collected_at + b'"')
        except ValidationError:
            return None  # the whole decode words the refusal
        return stored.report.model_copy(update={"collected_at": collected_at})
