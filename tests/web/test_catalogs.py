"""The gettext catalogs: one .po per language, the same ids, placeholders and terms in both.

Every id the web layer's Python and templates ask for (`t("id")`, extracted the way
`pybabel extract -F babel.cfg` does) must be in both catalogs; a message's placeholders must
be the same in both languages, so a call that fills one fills the other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from app.i18n.translate import CATALOGS, LANGUAGES, PLURAL_IDS, Translator, po_path
from app.web.views.finding_text import placeholders

ROOT = Path(__file__).resolve().parents[2]
KEYWORDS = {"t": None}


def _babel_methods() -> list[tuple[str, str]]:
    """The method map of babel.cfg (the file translators run pybabel with)."""
    methods = []
    for line in (ROOT / "babel.cfg").read_text().splitlines():
        match = re.fullmatch(r"\[(\w+): (.+)\]", line.strip())
        if match:
            methods.append((match[2], match[1]))
    return methods


def extracted_ids() -> set[str]:
    found = extract_from_dir(
        str(ROOT), method_map=_babel_methods(), keywords=KEYWORDS, comment_tags=()
    )
    ids: set[str] = set()
    for _, _, message, _, _ in found:
        ids.update([message] if isinstance(message, str) else [m for m in message if m])
    return ids


def test_extraction_finds_the_page_words_in_python_and_templates() -> None:
    ids = extracted_ids()
    assert {"nav_overview", "plugin_heading"} <= ids  # templates
    assert len(ids) > 250


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_id_the_code_asks_for_is_in_the_catalog(lang: str) -> None:
    assert sorted(extracted_ids() - set(CATALOGS[lang])) == []


def test_both_catalogs_hold_the_same_ids() -> None:
    assert set(CATALOGS["en"]) ^ set(CATALOGS["ko"]) == set()


def test_a_message_has_the_same_placeholders_in_both_languages() -> None:
    english, korean = CATALOGS["en"], CATALOGS["ko"]
    differing = {
        key: (placeholders(english[key]), placeholders(korean[key]))
        for key in english
        # A finding title words whichever params its rule emits (tests/web/test_finding_text.py).
        if not key.startswith("finding.")
        and set(placeholders(english[key])) != set(placeholders(korean[key]))
    }
    assert differing == {}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_po_files_parse_with_no_empty_or_fuzzy_message(lang: str) -> None:
    with po_path(lang).open("rb") as source:
        catalog = read_po(source, locale=lang)
    assert [m.id for m in catalog if m.id and (not m.string or m.fuzzy)] == []


def test_plural_forms_follow_the_language() -> None:
    key = "finding.gpu-demand-pending.title"
    words = {"slots": 2, "resource": "nvidia.com/gpu", "reason": "r"}
    assert Translator("en").n(key, 1, **words) == "1 pending pod wants 2 nvidia.com/gpu: r"
    assert Translator("en").n(key, 3, **words) == "3 pending pods want 2 nvidia.com/gpu: r"
    assert Translator("ko").n(key, 1, **words).startswith("대기 중인 파드 1개가")
    assert Translator("ko").n(key, 3, **words).startswith("대기 중인 파드 3개가")
    assert PLURAL_IDS["en"] == PLURAL_IDS["ko"]


def test_korean_keeps_the_seed_platforms_terms() -> None:
    """시분할 for time-slicing, 광고 for what the plugin advertises (the platform's manual)."""
    korean = "\n".join(CATALOGS["ko"].values())
    assert "타임 슬라이싱" not in korean and "타임슬라이싱" not in korean
    assert CATALOGS["ko"]["sharing_TimeSlicing"] == "시분할"
    assert "광고" in CATALOGS["ko"]["finding.fail-on-init-silent-zero.summary"]
