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
