"""Static checks of the Dockerfile: no Docker engine runs here, so the build is not executed."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _final_stage() -> list[tuple[str, str]]:
    steps = _instructions()
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def _ignored(path: str) -> bool:
    patterns = [
        p.strip()
        for p in (ROOT / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(prefix, pattern.removeprefix("**/"))
        or fnmatch.fnmatch(parts[i], pattern.removeprefix("**/"))
        for pattern in patterns
        for i, prefix in enumerate(prefixes)
        if not pattern.startswith("!")
    )


def test_dockerfile_final_stage_is_slim_python_311() -> None:
    args = dict(
        rest.split("=", 1) for word, rest in _instructions() if word == "ARG" and "=" in rest
    )
    image = _final_stage()[0][1].split()[0]

    assert image.replace("${PYTHON_IMAGE}", args.get("PYTHON_IMAGE", "")) == "python:3.11-slim"


def test_dockerfile_final_stage_runs_as_numeric_non_root_user() -> None:
    users = [rest for word, rest in _final_stage() if word == "USER"]

    assert users, "no USER in the final stage"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_dockerfile_final_stage_installs_no_build_tools() -> None:
    runs = " ".join(rest for word, rest in _final_stage() if word == "RUN")

    assert not re.search(r"apt-get install|apk add|gcc|build-essential|pip install", runs)


def test_dockerfile_one_image_for_dashboard_and_agent() -> None:
    final = dict(_final_stage())
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]

    assert json.loads(final["ENTRYPOINT"]) == ["gpu-slots"]
    assert "gpu-slots" in scripts
    assert json.loads(final["CMD"])[0] == "serve"


def test_dockerfile_environment_suits_a_read_only_root_filesystem() -> None:
    env = " ".join(rest for word, rest in _final_stage() if word == "ENV")

    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert "HOME=/tmp" in env
    assert "GEO_MLOPS_ASSETS_DIR" not in env  # the assets are package data in the venv


def test_dockerfile_healthcheck_needs_no_curl() -> None:
    check = dict(_final_stage())["HEALTHCHECK"]

    assert "python" in check and "/healthz" in check and "curl" not in check


def test_dockerfile_copies_only_files_that_reach_the_build_context() -> None:
    steps = _instructions()
    sources: list[str] = []
    for word, rest in steps:
        if word == "COPY" and "--from=" not in rest:
            sources += rest.split()[:-1]
    missing = [s for s in sources if not (ROOT / s).exists()]
    ignored = [s for s in sources if _ignored(s)]

    assert missing == [], f"COPY sources missing from the repository: {missing}"
    assert ignored == [], f"COPY sources excluded by .dockerignore: {ignored}"


def test_dockerignore_keeps_the_venv_tests_and_git_out() -> None:
    for path in (".venv/bin/python", "tests/chart/helm.py", ".git/HEAD", "app/__pycache__/x.pyc"):
        assert _ignored(path), path
    kept = ("app/cli.py", "app/web/assets/static/vendor", "app/web/assets/templates")
    for path in (*kept, "pyproject.toml"):
        assert not _ignored(path), path


def test_dockerignore_leaves_the_simulator_out_of_the_image() -> None:
    for path in ("app/simulator/main.py", "app/simulator/world/scenarios/demo.yaml"):
        assert _ignored(path), path
    for path in ("app/demo.py", "app/domain/quantity.py", "app/web/server.py"):
        assert not _ignored(path), path
