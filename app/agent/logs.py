"""Agent logs: one JSON object per line on stderr, for a log collector to read.

Each line has `ts`, `level`, `msg`, `node` and the call's own keys. Nothing secret is
ever passed in: the token never leaves the sender, URLs lose any user:password part.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

LOGGER_NAME = "gpu_slots.agent"


class JsonLineFormatter(logging.Formatter):
    """Formats a record as one JSON line; extra keys come from `extra={"fields": {...}}`."""

    def __init__(self, *, node: str) -> None:
        super().__init__()
        self._node = node

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
            "node": self._node,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update({key: value for key, value in fields.items() if key not in line})
        if record.exc_info and record.exc_info[1] is not None:
            line["exception"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        return json.dumps(line, default=str, ensure_ascii=False)


def configure_logging(*, node: str, stream: IO[str], level: int = logging.INFO) -> logging.Logger:
    """The agent's logger, writing JSON lines to `stream`; safe to call again (tests)."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLineFormatter(node=node))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


def fields(**values: Any) -> dict[str, Any]:
    """`extra=` for a log call: `log.info("sent", extra=fields(status=202))`."""
    return {"fields": values}


def safe_url(url: str) -> str:
    """The URL without any user:password part, for logs."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
