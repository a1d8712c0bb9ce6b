"""A change's warnings, an unreadable record and a failed apply's state read in both languages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.domain.changes.durable import UnreadableRecord
from app.domain.changes.models import ChangeWarning, warning_from_json
from app.i18n.translate import CATALOGS, LANGUAGES
from app.web.views.change_words import outcome_text, unreadable_text, warning_text

ROOT = Path(__file__).resolve().parents[2]


def _codes(callee: str, where: str) -> set[str]:
    """The literal first argument of every `callee(...)` under `where` (a folder or a file)."""
    found = set()
    top = ROOT / where
    for path in [top] if top.is_file() else sorted(top.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == callee:
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
    return found


def _warnings() -> set[str]:
    """A change's warning codes: its own, and the config writer's notes (coded there)."""
    return _codes("ChangeWarning", "app") | _codes("Coded", "app/domain/plugin/write.py")


def _record_errors() -> set[str]:
    """Why a stored record is unreadable: its own codes and the bounded JSON reader's."""
    return _codes("RecordInvalid", "app/domain") | _codes("JsonRefused", "app/domain")


def test_the_scans_see_the_warnings_and_the_record_errors() -> None:
    assert {"mps-removed", "answer-lost-written", "not-in-history"} <= _warnings()
    assert {"not-an-object", "too-deep", "not-json", "field-invalid"} <= _record_errors()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_warning_and_record_error_is_worded(lang: str) -> None:
    warnings = {f"warning.{c}" for c in _warnings() | {"recorded"}}
    errors = {f"unreadable.{c}" for c in _record_errors()}
    errors |= {"unreadable.misnamed", "unreadable.mislabelled"}
    assert sorted(k for k in warnings | errors if k not in CATALOGS[lang]) == []


def test_a_warning_reads_in_the_asked_language() -> None:
    merged = ChangeWarning("time-slicing-entry-merged", {"name": "nvidia.com/gpu", "replicas": 8})
    assert warning_text(merged, "en") == (
        "A second time-slicing entry for nvidia.com/gpu (replicas 8) is merged into the first."
    )
    assert warning_text(merged, "ko") == (
        "nvidia.com/gpu의 두 번째 시분할 항목(replicas 8)을 첫 번째 항목에 합칩니다."
    )


def test_an_old_records_english_warning_is_shown_as_it_was_kept() -> None:
    old = warning_from_json("The change is applied, but the Event was refused.")
    assert old == ChangeWarning("recorded", {"text": old.params["text"]})
    assert warning_text(old, "ko") == "The change is applied, but the Event was refused."
    assert warning_from_json({"code": "mps-removed", "params": {}}) == ChangeWarning("mps-removed")


@pytest.mark.parametrize(
    "stored",
    [
        {"code": "no-such-code", "params": {"a": 1}},
        {"code": "time-slicing-entry-merged", "params": {"name": "x"}},  # a value missing
        {"code": "answer-lost-made", "params": "not a mapping"},
    ],
)
def test_a_forged_warning_is_shown_as_its_code_never_an_error(stored: dict[str, object]) -> None:
    text = warning_text(warning_from_json(stored), "ko")
    assert text.startswith(str(stored["code"]))


def test_an_unreadable_record_says_why_in_the_asked_language() -> None:
    entry = UnreadableRecord("gpu-slots-change-x", "too-large", {"key": "record.json", "limit": 9})
    assert unreadable_text(entry, "en") == "record.json is larger than 9 bytes"
    assert unreadable_text(entry, "ko") == "record.json이(가) 9바이트보다 큽니다"


@pytest.mark.parametrize(
    ("state", "en", "ko"),
    [
        ("old", "The cluster is as before the change (old state).", "클러스터는 변경 전"),
        ("new", "The change is fully applied (new state).", "변경이 모두 적용"),
        (
            "half-new-old",
            "Half applied: the ConfigMap holds the NEW config, the DaemonSet the OLD one.",
            "일부만 적용됨: ConfigMap에는 새 설정이, DaemonSet에는 이전 설정이",
        ),
        ("unknown", "The state of the DaemonSet and its ConfigMap is unknown.", "알 수 없습니다"),
    ],
)
def test_a_failed_applys_state_is_worded(state: str, en: str, ko: str) -> None:
    assert outcome_text(state, "en") == en
    assert ko in outcome_text(state, "ko")
