"""The access log leaves out accepted agent reports (667 lines a second at 10,000 nodes,
issue 30) and keeps everything else, refused reports included."""

from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI

from app.web.server import ACCEPTED_REPORTS_UNLOGGED, uvicorn_config


def _line(method: str, path: str, status: int) -> logging.LogRecord:
    """The record uvicorn's access logger makes for one request."""
    return logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("10.0.0.7:51234", method, path, "1.1", status),
        None,
    )


@pytest.mark.parametrize(
    ("method", "path", "status", "logged"),
    [
        ("POST", "/api/v1/agent/reports", 202, False),
        ("POST", "/api/v1/agent/reports", 401, True),
        ("POST", "/api/v1/agent/reports", 409, True),
        ("POST", "/api/v1/agent/reports", 500, True),
        ("POST", "/api/v1/agent/reports?x=1", 202, True),
        ("GET", "/api/v1/agent/reports", 200, True),
        ("GET", "/api/v1/summary", 200, True),
        ("POST", "/admin/mode", 303, True),
    ],
)
def test_only_accepted_reports_are_left_out(
    method: str, path: str, status: int, logged: bool
) -> None:
    assert ACCEPTED_REPORTS_UNLOGGED.filter(_line(method, path, status)) is logged


def test_the_served_app_logs_through_the_filter() -> None:
    uvicorn_config(FastAPI(), host="127.0.0.1", port=0)
    uvicorn_config(FastAPI(), host="127.0.0.1", port=0)
    filters = logging.getLogger("uvicorn.access").filters
    assert filters.count(ACCEPTED_REPORTS_UNLOGGED) == 1
    assert not logging.getLogger("uvicorn.access").filter(
        _line("POST", "/api/v1/agent/reports", 202)
    )
