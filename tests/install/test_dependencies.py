"""Every third-party module app/ imports comes from a declared runtime dependency.

A deptry-like check without the tool: the imports are read with `ast` (also those inside
functions), mapped to their distributions with importlib.metadata, and compared with
`[project].dependencies`. A module only the test extras bring would pass every test and
still crash the installed package (markdown_it did, before it was declared).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Imported by name at run time (`importlib.import_module`), so `ast` cannot see them.
DYNAMIC_IMPORTS = {"pynvml"}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        _normalise(re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0]) for dep in project["dependencies"]
    }


def imported_top_level_modules(package: Path) -> dict[str, set[str]]:
    """Top-level module name -> the files importing it (absolute imports only)."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(
                    str(path.relative_to(package.parent))
                )
    for name in DYNAMIC_IMPORTS:
        found.setdefault(name, set()).add("(dynamic)")
    return found


def undeclared(package: Path) -> dict[str, set[str]]:
    """Third-party modules imported by the package whose distribution is not declared."""
    declared = declared_distributions()
    owners = packages_distributions()
    missing: dict[str, set[str]] = {}
    for module, files in imported_top_level_modules(package).items():
        if module in sys.stdlib_module_names or module == package.name or module == "__future__":
            continue
        distributions = {_normalise(d) for d in owners.get(module, [module])}
        if not distributions & declared:
            missing[module] = files
    return missing


def test_every_third_party_import_of_app_is_a_runtime_dependency() -> None:
    assert undeclared(ROOT / "app") == {}


def test_dependency_check_flags_a_module_only_the_test_extras_bring(tmp_path: Path) -> None:
    package = tmp_path / "app"
    package.mkdir()
    (package / "page.py").write_text("import yaml\n\ndef f():\n    import hypothesis\n")

    assert undeclared(package) == {"hypothesis": {"app/page.py"}}
