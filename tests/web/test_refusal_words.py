"""A refused change reads in the reader's language: every refusal the domain raises is a
`why` code worded as `refused.<why>` in both catalogs; the plugin's own words are evidence."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.domain.changes.models import Phrase, PlanRefused, RefusalCode
from app.i18n.translate import CATALOGS, LANGUAGES
from app.web.views.refusal_text import change_instead, refusal_markup, refusal_text

ROOT = Path(__file__).resolve().parents[2]
# Whys built from a code at run time: who owns the DRA driver, what is wrong with a token.
_BUILT = {
    "dra-only": ("gpu-operator", "helm", "other"),
    "bad-token": (
        "too-long",
        "not-base64-json",
        "unknown-version",
        "no-objects",
        "no-fields",
        "bad-generation",
    ),
}


def literal_args(callee: str, position: int) -> set[str]:
    """The literal string at `position` of every `callee(...)` call in app/domain and app/web
    (the web services' own refusals: a change or node not found, an unverified record)."""
    found: set[str] = set()
    paths = [*(ROOT / "app" / "domain").rglob("*.py"), *(ROOT / "app" / "web").rglob("*.py")]
    for path in sorted(paths):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == callee):
                continue
            arg = node.args[position] if len(node.args) > position else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
    return found


def raised_whys() -> set[str]:
    """The literal `why` of each `PlanRefused(code, why, ...)` in app/domain, and the built ones."""
    built = {f"{stem}.{leaf}" for stem, leaves in _BUILT.items() for leaf in leaves}
    return literal_args("PlanRefused", 1) | built


def test_the_scan_sees_the_planners_refusals() -> None:
    assert {"no-change", "config-invalid", "dra-node", "host-processes"} <= raised_whys()
    assert {"change-not-found", "unverified-record", "replicas-required"} <= raised_whys()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_refusal_the_domain_raises_is_worded(lang: str) -> None:
    missing = sorted(why for why in raised_whys() if f"refused.{why}" not in CATALOGS[lang])
    assert missing == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_phrase_of_a_refusal_is_worded(lang: str) -> None:
    phrases = literal_args("Phrase", 0)
    assert {"created", "changed-generation"} <= phrases
    assert sorted(p for p in phrases if f"phrase.{p}" not in CATALOGS[lang]) == []


def test_what_moved_since_the_preview_reads_as_a_list() -> None:
    changes = (
        Phrase("changed-generation", {"key": "ds", "paths": "spec", "then": 3, "now": 4}),
        Phrase("deleted", {"key": "cm"}),
    )
    refused = PlanRefused(RefusalCode.STALE, "changed-since-preview", changes=changes)
    assert refusal_text(refused).startswith(
        "Changed since the preview: ds: spec changed (generation 3 → 4); cm was deleted. "
    )
    assert "cm이(가) 삭제되었습니다" in refusal_text(refused, "ko")


def test_a_refusal_reads_in_each_language_with_the_plugins_words_as_evidence() -> None:
    refused = PlanRefused(RefusalCode.CONFIG_INVALID, "config-invalid", error="bad <key>")
    assert refusal_text(refused) == "The plugin would refuse the new config: bad <key>"
    assert refusal_text(refused, "ko") == "플러그인이 새 설정을 거부합니다: bad <key>"
    assert refusal_markup(refused, "ko") == (
        "플러그인이 새 설정을 거부합니다: <code>bad &lt;key&gt;</code>"
    )


def test_a_dra_node_is_told_what_to_change_instead_from_the_catalog() -> None:
    refused = PlanRefused(RefusalCode.DRA_NODE, "dra-node", node="gpu-1")
    assert "광고" in refusal_text(refused, "ko")
    assert change_instead(refused).startswith("set sharing per ResourceClaim (GpuConfig)")
    named = PlanRefused(RefusalCode.OPERATOR_MANAGED, "x", details=("ClusterPolicy",))
    assert change_instead(named) == "ClusterPolicy"
