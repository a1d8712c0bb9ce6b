"""Agent logs: one JSON object per line on stderr, for a log collector to read.

Each line has `ts`, `level`, `msg`, `node` and the call's own keys (app/logs.py's format).
Nothing secret is ever passed in: the token never leaves the sender, URLs lose any
user:password part.
"""

from __future__ import annotations

import logging
from typing import IO
from urllib.parse import urlsplit, urlunsplit

from app.logs import JsonFormatter, fields

__all__ = ["LOGGER_NAME", "configure_logging", "fields", "safe_url"]

LOGGER_NAME = "gpu_slots.agent"


def configure_logging(*, node: str, stream: IO[str], level: int = logging.INFO) -> logging.Logger:
    """The agent's logger, writing JSON lines to `stream`; safe to call again (tests)."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(static={"node": node}, tracebacks=False))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


def safe_url(url: str) -> str:
    """The URL without any user:password part, for logs."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
