"""`gpu-slots demo` refuses a simulator port it cannot use, with a clear message, and says
so plainly where the simulator is not installed (the production image)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "demo", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_demo_sim_port_in_use_exits_2_with_the_reason() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _demo("--sim-port", str(port))

    assert done.returncode == 2
    assert f"gpu-slots demo: cannot serve the simulated API on port {port}:" in done.stdout


def test_demo_sim_port_out_of_range_exits_2() -> None:
    done = _demo("--sim-port", "70000")

    assert done.returncode == 2
    assert "gpu-slots demo: --sim-port must be between 0 and 65535" in done.stdout


def test_demo_negative_rollout_seconds_exits_2() -> None:
    done = _demo("--rollout-seconds", "-1")

    assert done.returncode == 2
    assert "gpu-slots demo: rollout pace: seconds must be between 0 and 600" in done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_demo_starts_without_warnings() -> None:
    """Nothing but the banner up to the admin token: no warning meant for a real install."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "demo", "--port", str(_free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, in the order a terminal shows it
        text=True,
    )
    start: list[str] = []
    try:
        assert demo.stdout is not None
        for line in demo.stdout:
            start.append(line)
            if line.startswith("Admin token for this demo: ") or len(start) > 50:
                break
    finally:
        demo.terminate()
        demo.communicate(timeout=30)

    assert start[0].startswith("GPU Slots demo: http://127.0.0.1:"), start
    assert start[1].startswith("Simulated Kubernetes API: http://127.0.0.1:"), start
    assert start[2].startswith("Admin token for this demo: "), start
    assert len(start) == 3


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
