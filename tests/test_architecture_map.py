"""docs/ARCHITECTURE.md is the newcomer's map: it names every module of app/.

A module is named by its name in backticks (`goyaml`), its dotted path or its file path, in
the paragraph of its package; a new module the map does not name fails here.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "ARCHITECTURE.md"
LONGEST = 300  # issue 47: a short map, the decisions apart (docs/decisions/)


def _named(text: str, module: Path) -> bool:
    relative = module.relative_to(ROOT)
    dotted = ".".join(relative.with_suffix("").parts)
    return any(
        form in text for form in (f"`{module.stem}`", f"{module.stem}.py", dotted, str(relative))
    )


def test_the_map_names_every_module_of_app() -> None:
    text = MAP.read_text(encoding="utf-8")
    unnamed = [
        str(module.relative_to(ROOT))
        for module in sorted((ROOT / "app").rglob("*.py"))
        if module.name != "__init__.py" and not _named(text, module)
    ]
    assert unnamed == [], "name these modules in docs/ARCHITECTURE.md's map"


def test_the_map_stays_short() -> None:
    assert len(MAP.read_text(encoding="utf-8").splitlines()) <= LONGEST
