"""The package as it ships: built, installed without extras, started, and driven by kubectl.

The install runs `scripts/install-package.sh` into a fresh virtual environment from a copy
of exactly what the Dockerfile copies into its builder stage, so this test and the image
cannot drift apart. pip's cache is kept, so a second run downloads nothing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.kube_tools import kube_tools
from tests.live import wait_for

ROOT = Path(__file__).resolve().parents[2]
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: shipped-check
  namespace: default
data:
  hello: world
"""


def _builder_copies() -> list[str]:
    """The sources the Dockerfile's builder stage copies (before its install step)."""
    text = (ROOT / "Dockerfile").read_text()
    builder = text.split("FROM ", 2)[1]
    return [line.split()[1] for line in builder.splitlines() if line.startswith("COPY ")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed as the Dockerfile installs it."""
    base = tmp_path_factory.mktemp("shipped")
    context = base / "context"
    context.mkdir()
    for source in _builder_copies():
        target = context / source
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / source).is_dir():
            shutil.copytree(
                ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(ROOT / source, target)
    environment = base / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    done = subprocess.run(
        ["sh", str(context / "scripts/install-package.sh"), str(environment), str(context)],
        cwd=context,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return environment


def _run(environment: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(environment / "bin" / args[0]), *args[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_dockerfile_installs_with_the_shared_script() -> None:
    assert "scripts/install-package.sh" in _builder_copies()
    assert "RUN sh scripts/install-package.sh /opt/venv ." in (ROOT / "Dockerfile").read_text()


def test_installed_package_has_no_extras_and_imports_every_module(
    installed: Path, tmp_path: Path
) -> None:
    script = (
        "import importlib, pkgutil, app\n"
        "names = [m.name for m in pkgutil.walk_packages(app.__path__, 'app.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(app.__file__)\n"
        "print(len(names))\n"
    )
    done = _run(installed, "python", "-c", script, cwd=tmp_path)
    pytest_there = _run(installed, "python", "-c", "import pytest", cwd=tmp_path)
    expected = sum(1 for _ in (ROOT / "app").rglob("*.py")) - 1  # app/__init__.py itself

    assert done.returncode == 0, done.stderr
    location, count = done.stdout.split()
    assert location.startswith(str(installed))  # the installed copy, not the source tree
    assert int(count) == expected
    assert pytest_there.returncode != 0  # no test extras came along


def test_installed_package_carries_the_page_assets(installed: Path, tmp_path: Path) -> None:
    script = (
        "from app.web.runtime import default_assets_dir\n"
        "root = default_assets_dir()\n"
        "print(root)\n"
        "for p in ('templates/base.html', 'static/css/app.css', 'docs/findings.md'):\n"
        "    print(p, (root / p).is_file())\n"
    )
    done = _run(installed, "python", "-c", script, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    location, *files = done.stdout.splitlines()
    assert location.startswith(str(installed))
    assert files == [
        "templates/base.html True",
        "static/css/app.css True",
        "docs/findings.md True",
    ]


def test_installed_agent_help_runs(installed: Path, tmp_path: Path) -> None:
    done = _run(installed, "gpu-slots", "agent", "--help", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "--dashboard" in done.stdout


@pytest.fixture
def demo(installed: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`gpu-slots demo --port P --sim-port Q` from the installed package, run in a tmp dir.

    No assets variable and no source tree nearby: the pages must come from the wheel.
    """
    port, sim_port = _free_port(), _free_port()
    env = {**os.environ}
    for name in ("PYTHONPATH", "GEO_MLOPS_ASSETS_DIR"):
        env.pop(name, None)
    process = subprocess.Popen(
        [
            str(installed / "bin" / "gpu-slots"),
            "demo",
            "--port",
            str(port),
            "--sim-port",
            str(sim_port),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{sim_port}"
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
        if "Traceback" in output:
            print(output, file=sys.stderr)


def test_installed_demo_serves_readyz_and_kubectl_applies_a_configmap(
    demo: tuple[str, str], tmp_path: Path
) -> None:
    dashboard, simulator = demo

    def ready() -> bool:
        try:
            return httpx.get(f"{dashboard}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(ready, timeout_s=60, interval_s=0.2, what="installed demo /readyz")
    page = httpx.get(f"{dashboard}/", timeout=10)
    css = httpx.get(f"{dashboard}/static/css/app.css", timeout=10)
    findings = httpx.get(f"{dashboard}/docs/findings", timeout=10)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(CONFIGMAP)
    kubectl = [str(kube_tools().kubectl), f"--server={simulator}"]
    applied = subprocess.run(
        [*kubectl, "apply", "-f", str(manifest)], capture_output=True, text=True, timeout=60
    )
    shown = subprocess.run(
        [*kubectl, "get", "configmap", "shipped-check", "-o", "jsonpath={.data.hello}"],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert (page.status_code, css.status_code, findings.status_code) == (200, 200, 200)
    assert 'data-testid="doc-missing"' not in findings.text
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "configmap/shipped-check created"
    assert shown.stdout == "world"
