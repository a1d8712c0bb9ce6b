"""The console script where the simulator is not installed (the production image leaves
app/simulator out; the wheel keeps it): its two commands say so, the others remain."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_without_the_simulator_demo_and_simulate_say_so_and_serve_remains(tmp_path: Path) -> None:
    """The package as the production image holds it (app/ less app/simulator): the two
    simulator commands answer one clear sentence (no traceback), the others still parse."""
    shutil.copytree(
        ROOT / "app",
        tmp_path / "app",
        ignore=lambda folder, names: [
            n for n in names if n == "__pycache__" or Path(folder, n) == ROOT / "app/simulator"
        ],
    )
    assert not (tmp_path / "app" / "simulator").exists()

    # -S: no .pth files, so the checkout's editable install cannot lend its app.simulator;
    # the dependencies come from site-packages on the path.
    path = os.pathsep.join((str(tmp_path), sysconfig.get_paths()["purelib"]))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", "-m", "app.cli", *args],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    for command in ("demo", "simulate"):
        done = cli(command, "--port", "0")
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"gpu-slots {command}: this installation has no simulator")
        assert "Traceback" not in done.stderr
    listed = cli("--help")
    serve = cli("serve", "--help")
    assert listed.returncode == 0 and "demo" in listed.stdout
    assert serve.returncode == 0 and "--host" in serve.stdout, serve.stderr
