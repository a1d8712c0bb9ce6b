"""Every setting is described twice and grouped once: a description on its field in
app/settings.py, and a row in its group's section of docs/SETTINGS.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from app.settings import GROUPS, Settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "SETTINGS.md"
_HEADING = re.compile(r"^#{2,4} .*$", re.M)
_GROUP = re.compile(r"`(\w+Settings)`")


def _sections() -> dict[str, str]:
    """The text under each heading of docs/SETTINGS.md that names a group, in order."""
    text = DOC.read_text(encoding="utf-8")
    headings = list(_HEADING.finditer(text))
    ends = [h.start() for h in headings[1:]] + [len(text)]
    return {
        group[1]: text[h.end() : end]
        for h, end in zip(headings, ends, strict=True)
        if (group := _GROUP.search(h[0]))
    }


def test_settings_is_its_groups_and_nothing_else() -> None:
    grouped = [name for group in GROUPS for name in group.model_fields]
    assert len(grouped) == len(set(grouped)), "a field in two groups"
    assert set(grouped) == set(Settings.model_fields)
    assert all(issubclass(Settings, group) for group in GROUPS)


@pytest.mark.parametrize("group", GROUPS, ids=lambda group: group.__name__)
def test_every_setting_has_a_description(group: type[BaseModel]) -> None:
    missing = [n for n, f in group.model_fields.items() if not (f.description or "").strip()]
    assert missing == []


def test_the_doc_has_one_section_per_group_in_order() -> None:
    assert list(_sections()) == [group.__name__ for group in GROUPS]


@pytest.mark.parametrize("group", GROUPS, ids=lambda group: group.__name__)
def test_every_variable_is_a_row_of_its_groups_section(group: type[BaseModel]) -> None:
    rows = set(re.findall(r"^\| `(GEO_MLOPS_\w+)` \|", _sections().get(group.__name__, ""), re.M))
    assert rows == {f"GEO_MLOPS_{name.upper()}" for name in group.model_fields}
