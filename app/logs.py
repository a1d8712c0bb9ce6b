"""One JSON object per log line, so a log collector reads every component's output alike."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "fields"}
# Kept as JSON (an audit line's before/after stay objects, never a Python repr); anything
# else inside them is written as its str() by json.dumps(default=str).
_JSON_VALUES = (str, int, float, bool, dict, list, tuple, type(None))


class JsonFormatter(logging.Formatter):
    """`ts`, `level`, `logger`, `msg`, the static fields, then the call's own keys.

    A call's keys come from `extra={...}` or `extra={"fields": {...}}` (see `fields()`).
    An exception becomes `exception: "Type: message"`, plus the traceback when asked for.
    """

    def __init__(self, *, static: Mapping[str, str] | None = None, tracebacks: bool = True):
        super().__init__()
        self._static = dict(static or {})
        self._tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **self._static,
        }
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        nested = getattr(record, "fields", None)
        if isinstance(nested, dict):
            extra.update(nested)
        for key, value in extra.items():
            if key not in entry and not key.startswith("_"):
                entry[key] = value if isinstance(value, _JSON_VALUES) else str(value)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["exception"] = f"{type(error).__name__}: {error}"
            if self._tracebacks:
                entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def fields(**values: Any) -> dict[str, Any]:
    """`extra=` for a log call: `log.info("sent", extra=fields(status=202))`."""
    return {"fields": values}


def configure_logging(level: int = logging.INFO) -> None:
    """Route every logger (ours, uvicorn's) through the JSON formatter on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # A request log line per agent report is noise; failures are logged by the caller.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
