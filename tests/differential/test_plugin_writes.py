"""Our config writer against the device plugin's own config package.

Every config of the corpus (real ones, ours, adversarial and generated ones) is rewritten to
time-slicing by the change planner's writer; the plugin's own reader must then run it with
exactly the asked settings, and may refuse a written config only where it refused the old
one (a key the writer keeps, such as a refused flag, stays refused).
"""

from __future__ import annotations

from typing import Any

from app.domain.changes.edits import time_slicing_text
from app.domain.changes.models import ChangeWarning
from tests.differential.build import Oracles
from tests.differential.corpus import (
    Case,
    adversarial_cases,
    generated_cases,
    project_cases,
    real_cases,
)

ASKED = {"replicas": 5, "rename_by_default": False, "fail_requests_greater_than_one": True}


def _written(case: Case) -> Case:
    warnings: list[ChangeWarning] = []
    text = time_slicing_text(case.text, warnings=warnings, **ASKED)
    return Case(f"written {case.id}", text, case.env)


def _as_asked(answer: dict[str, Any]) -> bool:
    largest: dict[str, int] = {}
    for entry in answer["resources"]:
        largest[entry["name"]] = max(largest.get(entry["name"], 0), entry["replicas"])
    return (
        answer["strategy"] == "time-slicing"
        and largest.get("nvidia.com/gpu") == ASKED["replicas"]
        and answer["renameByDefault"] is ASKED["rename_by_default"]
        and answer["failRequestsGreaterThanOne"] is ASKED["fail_requests_greater_than_one"]
    )


def test_every_written_config_runs_as_asked_on_the_plugins_own_reader(oracle: Oracles) -> None:
    cases = real_cases() + project_cases() + adversarial_cases() + generated_cases()
    written = [_written(case) for case in cases]
    before = oracle.ask_plugin([case.request() for case in cases])
    after = oracle.ask_plugin([case.request() for case in written])
    wrong: dict[str, str] = {}
    for case, old, new in zip(cases, before, after, strict=True):
        if new.get("error"):
            if not old.get("error"):
                wrong[case.id] = f"refused once written: {new['error']}"
        elif not _as_asked(new):
            wrong[case.id] = f"read as {new}"
    assert wrong == {}
    assert sum(1 for answer in after if not answer.get("error")) >= len(cases) // 2
