"""app/domain emits codes and parameters; the words a person reads are the web layer's.

The scan reads every string literal and f-string of app/domain (docstrings, fields'
docstrings and `description=` aside: those are for developers) and calls one *prose* when
it holds a run of three Latin-script words of a sentence ("is not ready", "the plugin runs") outside
a `kubectl`/`helm` command. Names, codes, units and numbers never make such a run.

Not one such string is left: a new sentence anywhere in the domain fails.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ROOT / "app" / "domain"
_WORD = re.compile(r"^[(\"'`]*([A-Z]?[a-z]+)[)\"'`,.:;!?]*$")
_COMMANDS = {"kubectl", "helm", "sudo"}
RUN = 3

# Every module of app/domain is clear: finding titles and remedies (a command plus a
# `remedy.<code>`), report and stored-record validation, change warnings, the apply outcome,
# the rollout's waits, pending-demand reasons and the planners' refusals are codes and params,
# worded in the web layer; one sentence anywhere fails.
# app/domain/plugin/* and quantity.py raise codes too (app.domain.coded, `plugin.*` and
# `quantity.*`): the English catalog reproduces what the device plugin or apimachinery itself
# says, so an admin can match it against the plugin's log, and a Korean page shows the Korean
# sentence with that English beside it in <code> (app/i18n/coded.py).


def prose(text: str) -> bool:
    run = 0
    command = False
    for token in text.split():
        match = _WORD.match(token)
        command = bool(match) and (command or match[1] in _COMMANDS)
        run = run + 1 if match and not command else 0
        if run >= RUN:
            return True
    return False


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        if isinstance(node, ast.ClassDef):  # a field's docstring: the string under it
            for field, under in zip(node.body, node.body[1:], strict=False):
                if isinstance(field, ast.AnnAssign) and isinstance(under, ast.Expr):
                    found.add(id(under.value))
    return found


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string a person could read: constants and f-strings."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "description":
            skip.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else " X " for v in node.values]
            found.append((node.lineno, "".join(str(p) for p in parts)))
    return found


def prose_in(source: str) -> list[tuple[int, str]]:
    return [(line, text) for line, text in _texts(ast.parse(source)) if prose(text)]


def prose_by_module() -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in sorted(DOMAIN.rglob("*.py")):
        found = prose_in(path.read_text())
        if found:
            counts[str(path.relative_to(ROOT))] = len(found)
    return counts


def test_the_scan_finds_a_planted_finding_title_and_passes_codes() -> None:
    planted = '''
def rule(node):
    """A docstring is for developers: it is not scanned."""
    return finding(
        "plugin-pod-not-ready",
        f"Plugin pod {node.pod} on {node.name} is not ready",
        evidence={"phase": "CrashLoopBackOff", "node": "gpu-server-1"},
        words={"variant": "dra-claim", "resource": "nvidia.com/gpu"},
        remedy=f"kubectl -n {node.ns} get pods -o wide",
    )
'''
    assert [line for line, _ in prose_in(planted)] == [6]


@pytest.mark.parametrize(
    "text",
    ["the plugin advertises nothing", "the record is malformed", "is held outside any pod"],
)
def test_sentences_are_prose(text: str) -> None:
    assert prose(text)


@pytest.mark.parametrize(
    "text",
    [
        "finding.plugin-pod-not-ready.title",
        "nvidia.com/gpu",
        "time-slicing",
        "kubectl get pods -A --field-selector spec.nodeName=x",
        "GEO_MLOPS_KUBERNETES_DEVICE_PLUGIN_NAME",
        "CrashLoopBackOff",
    ],
)
def test_names_codes_and_commands_are_not_prose(text: str) -> None:
    assert not prose(text)


def finding_calls_with_words(source: str) -> list[int]:
    """Lines of `finding(...)` calls that pass a title, or prose among their values."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "finding"):
            continue
        values = [k.value for k in node.keywords if k.arg in ("evidence", "words")]
        texts = [
            n.value
            for value in values
            for n in ast.walk(value)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
        if len(node.args) > 1 or any(prose(text) for text in texts):
            bad.append(node.lineno)
    return bad


def test_a_planted_finding_title_is_caught() -> None:
    planted = 'finding("agent-report-stale", f"Agent report from {name} is old", evidence={})'
    assert finding_calls_with_words(planted) == [1]
    planted = 'finding("x", evidence={}, words={"why": "the pod is not ready"}, remedy="r")'
    assert finding_calls_with_words(planted) == [1]
    assert finding_calls_with_words('finding("x", evidence={"a": "b"}, remedy="r")') == []


def test_finding_rules_emit_codes_and_values_never_a_title() -> None:
    bad = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(DOMAIN.rglob("*.py"))
        if (lines := finding_calls_with_words(path.read_text()))
    }
    assert bad == {}


def test_the_domain_holds_no_prose() -> None:
    assert prose_by_module() == {}, "the domain emits codes; word the text in the .po catalogs"
