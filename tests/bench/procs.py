"""The benchmark's processes: the simulated API server, the dashboard, and their memory."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
AGENT_TOKEN = "bench-agent-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proc_status_kib(pid: int, field: str) -> int:
    """VmRSS / VmHWM of a process, in KiB (-1 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return -1
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def stop(process: subprocess.Popen[Any] | None, *, timeout_s: float = 15) -> None:
    """End a process we started: close its stdin, SIGTERM, then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    if process.stdin is not None:
        process.stdin.close()
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)


@dataclass
class Simulator:
    process: subprocess.Popen[str]
    url: str
    load_s: float


def start_simulator(nodes: int, *, log: Path) -> Simulator:
    """`tests.bench.simserver` in its own process; returns once it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.simserver", "--nodes", str(nodes)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        stop(process)
        raise RuntimeError(f"the simulator did not start; see {log}")
    info = json.loads(line)
    return Simulator(process, str(info["url"]), float(info["load_s"]))


@dataclass
class Dashboard:
    process: subprocess.Popen[bytes]
    url: str
    started_at: float  # time.perf_counter() just before the process was spawned

    def rss_kib(self) -> int:
        return proc_status_kib(self.process.pid, "VmRSS")

    def hwm_kib(self) -> int:
        return proc_status_kib(self.process.pid, "VmHWM")


SESSION_SECRET = "bench-session-secret-0123456789abcdef"  # shared by replicas (peer token)


def start_dashboard(
    kube_url: str, *, log: Path, env_extra: dict[str, str] | None = None
) -> Dashboard:
    """`gpu-slots serve --kube-server URL` with an agent token; returns at once."""
    port = free_port()
    # One token for thousands of synthetic agents: the shared token, opted in explicitly.
    env = dict(
        os.environ,
        GEO_MLOPS_AGENT_TOKEN=AGENT_TOKEN,
        GEO_MLOPS_AGENT_AUTH="shared-token",
        GEO_MLOPS_SESSION_SECRET=SESSION_SECRET,
        **(env_extra or {}),
    )
    # `gpu-slots serve`, importing `app` from ROOT (so a copy of the tree can be measured)
    command = [
        sys.executable,
        "-m",
        "app.cli",
        "serve",
        "--kube-server",
        kube_url,
        "--port",
        str(port),
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    return Dashboard(process, f"http://127.0.0.1:{port}", started)


def poll(
    check: Callable[[], bool],
    *,
    timeout_s: float,
    interval_s: float = 0.02,
    what: str,
) -> float:
    """Call `check` until it is true; return time.perf_counter() at that moment."""
    deadline = time.perf_counter() + timeout_s
    while True:
        try:
            if check():
                return time.perf_counter()
        except httpx.TransportError:
            pass
        if time.perf_counter() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout_s:.0f} s")
        time.sleep(interval_s)
