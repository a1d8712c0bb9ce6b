"""`gpu-slots demo` refuses a simulator port it cannot use, with a clear message."""

from __future__ import annotations

import socket
import subprocess
import sys


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
    """Nothing but the banner before the demo serves: no warning meant for a real install."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "demo", "--port", str(_free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = [demo.stdout.readline() for _ in range(3)] if demo.stdout else []
    finally:
        demo.terminate()
        _, errors = demo.communicate(timeout=30)

    assert banner[0].startswith("GPU Slots demo: http://127.0.0.1:")
    assert banner[2].startswith("Admin token for this demo: ")
    logged = [line for line in errors.splitlines() if line.startswith("{")]
    assert not [
        line for line in logged if '"level": "warning"' in line or '"level": "error"' in line
    ]
