"""The house rules a newcomer can rely on: small modules, short functions (issue 24)."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines, line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_app_has_modules() -> None:
    assert len(_modules()) > 100


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(APP)))
def test_module_is_small_with_short_functions(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(APP)}: {lines} lines; split it by concept"
    assert _long_functions(path) == [], f"{path.relative_to(APP)}: cut into named steps"
