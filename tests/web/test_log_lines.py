"""Issue 44: an audit line's before/after are JSON objects in the line, never a Python repr."""

from __future__ import annotations

import json
import logging

from app.logs import JsonFormatter


def test_a_mapping_in_a_log_line_stays_a_json_object() -> None:
    record = logging.makeLogRecord(
        {"msg": "plugin config change applied", "levelname": "INFO", "name": "gpu_slots.audit"}
    )
    record.after = {"mode": "time-slicing", "replicas": 4, "error": None}
    record.nodes = ("gpu-ws-5",)
    line = json.loads(JsonFormatter().format(record))
    assert line["after"] == {"mode": "time-slicing", "replicas": 4, "error": None}
    assert line["nodes"] == ["gpu-ws-5"]
    assert "{'" not in JsonFormatter().format(record)
