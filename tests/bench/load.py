"""Concurrent GET load from a separate process: `wrk` when installed, else `tests.bench.loadgen`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.procs import ROOT

# wrk's summary as one JSON line; latency is in microseconds.
WRK_SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "p50_us": %d, "p99_us": %d, "non2xx": %d, "errors": %d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
"""


@dataclass
class LoadResult:
    tool: str
    connections: int
    seconds: float
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    failed: int  # non-2xx answers and socket errors


def tool() -> str:
    return "wrk" if shutil.which("wrk") else "loadgen"


def get_load(
    url: str, path: str, *, connections: int, duration_s: float, headers: tuple[str, ...] = ()
) -> LoadResult:
    """`connections` keep-alive connections GETting `url + path` for `duration_s`."""
    if shutil.which("wrk"):
        return _wrk(url + path, connections=connections, duration_s=duration_s, headers=headers)
    return _loadgen(url, path, connections=connections, duration_s=duration_s, headers=headers)


def _wrk(
    target: str, *, connections: int, duration_s: float, headers: tuple[str, ...] = ()
) -> LoadResult:
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(WRK_SCRIPT)
        script.flush()
        done = subprocess.run(
            [
                "wrk",
                "-t1",
                f"-c{connections}",
                f"-d{max(1, round(duration_s))}s",
                "--timeout",
                "30s",
                "-s",
                script.name,
                *(item for header in headers for item in ("-H", header)),
                target,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1]
    data = json.loads(line)
    return LoadResult(
        tool="wrk",
        connections=connections,
        seconds=data["seconds"],
        requests=data["requests"],
        rps=data["requests"] / data["seconds"],
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        failed=data["non2xx"] + data["errors"],
    )


def _loadgen(
    url: str, path: str, *, connections: int, duration_s: float, headers: tuple[str, ...] = ()
) -> LoadResult:
    data = run_loadgen(
        [
            *(item for header in headers for item in ("--header", header)),
            "--url",
            url,
            "--path",
            path,
            "--connections",
            str(connections),
            "--duration",
            str(duration_s),
        ]
    )
    ok = sum(n for code, n in data["statuses"].items() if code.startswith("2"))
    return LoadResult(
        tool="loadgen",
        connections=connections,
        seconds=data["seconds"],
        requests=data["requests"],
        rps=data["rps"],
        p50_ms=data["p50_ms"],
        p99_ms=data["p99_ms"],
        failed=data["requests"] - ok + data["errors"],
    )


def run_loadgen(args: list[str]) -> dict[str, Any]:
    """Run `tests.bench.loadgen` in its own process; its JSON result."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.loadgen", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def post_reports(url: str, bodies: list[bytes], *, token: str, connections: int) -> dict[str, Any]:
    """POST each body once to the agent endpoint from a separate process; loadgen's result."""
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", dir=Path(tempfile.gettempdir())) as f:
        f.write(b"\n".join(bodies) + b"\n")
        f.flush()
        return run_loadgen(
            [
                "--url",
                url,
                "--path",
                "/api/v1/agent/reports",
                "--bodies",
                f.name,
                "--token",
                token,
                "--connections",
                str(connections),
            ]
        )


class BackgroundAgents:
    """Agents at work while other figures are measured: each body POSTed once, paced.

    Real agents are as many clients as nodes, each posting on its own clock; the paced
    loader stands in for them over `connections` keep-alive connections, enough that a
    slow answer does not hold back the reports due after it (4 did, at 5,000 nodes; 16 did
    at 10,000 nodes, 667 reports/s, whenever the readers' 16 connections kept each POST
    waiting ~25 ms in the event loop's queue: 16 connections then carry at most 640/s).
    """

    def __init__(
        self, url: str, bodies: Iterable[bytes], *, token: str, rate: float, connections: int = 64
    ) -> None:
        self._file = tempfile.NamedTemporaryFile("wb", suffix=".jsonl")  # noqa: SIM115
        for body in bodies:
            self._file.write(body + b"\n")
        self._file.flush()
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.bench.loadgen",
                *("--url", url, "--path", "/api/v1/agent/reports", "--bodies", self._file.name),
                *("--token", token, "--connections", str(connections), "--rate", f"{rate:.3f}"),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.result: dict[str, Any] = {}

    def stop(self) -> dict[str, Any]:
        """Stop posting; loadgen's result (requests, statuses, ...)."""
        if self._process.poll() is None:
            self._process.terminate()
        out, _ = self._process.communicate(timeout=30)
        self._file.close()
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        self.result = json.loads(lines[-1]) if lines else {"error": "no result"}
        return self.result
