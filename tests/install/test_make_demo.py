"""`make demo`, the newcomer's first command (issue 44): it installs the runtime dependencies
alone (the test extra is for `make check` and `make test`), quietly, with the first Python
3.11-3.13 on the PATH. Read from `make -n` (what make would run), so nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="needs make")


def _dry_run(target: str, venv: Path, path: str | None = None) -> str:
    env = {**os.environ, "PATH": path} if path is not None else None
    done = subprocess.run(
        [str(MAKE), "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    return done.stdout


def _python_dir(tmp_path: Path, *, good: str, bad: tuple[str, ...]) -> str:
    """A PATH folder where `good` is this Python and each `bad` fails as a pyenv shim does."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / good).symlink_to(sys.executable)
    for name in bad:
        shim = folder / name
        shim.write_text("#!/bin/sh\necho 'pyenv: command not found' >&2\nexit 127\n")
        shim.chmod(0o755)
    return str(folder)


def test_demo_installs_the_runtime_dependencies_only(tmp_path: Path) -> None:
    demo = _dry_run("demo", tmp_path / ".venv")
    installs = [line for line in demo.splitlines() if "/pip install " in line and " -e " in line]
    assert len(installs) == 1, demo
    assert installs[0].endswith(" -e ."), installs  # no `.[test]`: no pytest, ruff, mypy...
    assert "--quiet --quiet" in installs[0] and "PYTHONWARNINGS=ignore" in installs[0]
    assert "gpu-slots demo --port 8000" in demo
    check = _dry_run("check", tmp_path / ".venv")
    assert any(line.endswith(" -e '.[test]'") for line in check.splitlines()), check


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info[:2] <= (3, 13), reason="runs with the Python under test"
)
def test_the_first_python_3_11_to_3_13_on_the_path_makes_the_venv(tmp_path: Path) -> None:
    path = _python_dir(tmp_path, good="python3", bad=("python3.13", "python3.12", "python3.11"))
    demo = _dry_run("demo", tmp_path / ".venv", path)
    assert f"python3 -m venv {tmp_path / '.venv'}" in demo, demo


def test_without_a_python_3_11_to_3_13_it_says_which_to_install(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    old = folder / "python3"
    old.write_text("#!/bin/sh\nexit 1\n")  # as a Python 3.10 answers the version check
    old.chmod(0o755)
    done = subprocess.run(
        [str(MAKE), "-C", str(ROOT), "demo", f"VENV={tmp_path / '.venv'}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PATH": str(folder)},
    )
    assert done.returncode != 0
    assert "needs Python 3.11, 3.12 or 3.13 on the PATH" in done.stdout, done.stdout
    assert not (tmp_path / ".venv").exists()
