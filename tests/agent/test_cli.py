"""`gpu-slots agent` end to end: no-GPU exit, SIGTERM, a fake-NVML report the dashboard accepts."""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.agent.main import add_arguments, parse_interval_s
from app.agent.service import run_agent
from app.domain.report import AgentReport
from tests.agent.fake_nvml import MIB, FakeGpu, FakeNvml, uuid_for

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
POD_UID = "3f6c2a1e-8b4d-4c7a-9e21-5d0b7f8a6c13"
NO_DRIVER = "no NVIDIA driver: NVML library not found and nvidia-smi not on PATH"


def _has_nvidia_driver() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


needs_no_driver = pytest.mark.skipif(_has_nvidia_driver(), reason="machine has an NVIDIA driver")


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _env_without_nvidia_smi() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "NODE_NAME"}
    env["PATH"] = str(ROOT / ".venv" / "bin")  # python is there; nvidia-smi is nowhere
    return env


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15.0), ("1m", 60.0), ("30", 30.0), ("1500ms", 1.5), ("1h", 3600.0)],
)
def test_parse_interval_units_give_seconds(text: str, seconds: float) -> None:
    assert parse_interval_s(text) == seconds


@pytest.mark.parametrize("text", ["fast", "0", "500ms", "-5s", "1d"])
def test_parse_interval_bad_or_too_short_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_interval_s(text)


@pytest.mark.parametrize("module", ["app.cli", "app.agent.main"])
@needs_no_driver
def test_agent_once_without_gpu_exits_nonzero_with_one_clear_line(
    tmp_path: Path, module: str
) -> None:
    if module == "app.cli" and importlib.util.find_spec("app.web.server") is None:
        pytest.skip("app.cli cannot build its parser until the other subcommands exist")
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    prefix = ["agent"] if module == "app.cli" else []

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            module,
            *prefix,
            "--dashboard",
            _closed_port_url(),
            "--token-file",
            str(token),
            "--node",
            "gpu-node-1",
            "--once",
        ],
        cwd=ROOT,
        env=_env_without_nvidia_smi(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    record = json.loads(line)
    assert (record["level"], record["msg"], record["node"]) == ("error", NO_DRIVER, "gpu-node-1")
    assert "s3cret" not in done.stderr


@needs_no_driver
def test_agent_loop_without_gpu_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.agent.main",
            "--dashboard",
            _closed_port_url(),
            "--token-file",
            str(token),
            "--node",
            "gpu-node-1",
            "--interval",
            "1s",
        ],
        cwd=ROOT,
        env=_env_without_nvidia_smi(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        seen: list[dict[str, object]] = []
        while time.monotonic() < deadline and not any(
            line["msg"] == "report not delivered, will retry" for line in seen
        ):
            seen.append(json.loads(process.stderr.readline()))
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=20)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 0
    messages = [line["msg"] for line in seen] + [json.loads(x)["msg"] for x in rest.splitlines()]
    assert messages[:2] == ["agent started", NO_DRIVER]
    assert messages[-1] == "agent stopped"
    assert messages.count(NO_DRIVER) == 1
    assert "Traceback" not in rest


def test_agent_once_with_fake_nvml_posts_report_dashboard_accepts(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    received: list[AgentReport] = []

    def dashboard(request: httpx.Request) -> httpx.Response:
        if request.headers.get("Authorization") != "Bearer s3cret-token":
            return httpx.Response(401, json={"detail": "bad token"})
        received.append(AgentReport.model_validate(json.loads(request.content)))
        return httpx.Response(202, json={"accepted": True})

    fake = FakeNvml(
        [
            FakeGpu(
                uuid=uuid_for(0),
                name="NVIDIA GeForce RTX 4090",
                memory_total_bytes=24564 * MIB,
                memory_used_bytes=21873 * MIB,
                processes=[(3121, 17580 * MIB), (48213, 4026 * MIB)],
            )
        ]
    )
    log = io.StringIO()
    args = _args(
        "--dashboard",
        "https://dash.example",
        "--token-file",
        str(token),
        "--node",
        "gpu-node-1",
        "--once",
        "--proc-root",
        str(FIXTURES / "proc"),
    )

    status = run_agent(args, stream=log, nvml=fake, transport=httpx.MockTransport(dashboard))

    assert status == 0
    (report,) = received
    assert (report.node, report.source, report.driver_version) == (
        "gpu-node-1",
        "nvml",
        "550.54.14",
    )
    host, pod = report.gpus[0].processes
    assert (host.pod_uid, host.user, pod.pod_uid) == (None, "root", POD_UID)
    assert fake.shutdown_calls == 1
    (line,) = log.getvalue().splitlines()
    assert json.loads(line)["msg"] == "report delivered"


def test_agent_once_wrong_token_exits_nonzero_naming_the_cause(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tok-9f8e7d\n")
    log = io.StringIO()
    args = _args("--dashboard", "https://dash.example", "--token-file", str(token), "--once")
    transport = httpx.MockTransport(lambda request: httpx.Response(401, json={"detail": "no"}))

    status = run_agent(
        args, stream=log, nvml=FakeNvml([FakeGpu(uuid=uuid_for(0))]), transport=transport
    )

    assert status == 1
    (line,) = log.getvalue().splitlines()
    assert "refused the token" in json.loads(line)["msg"]
    assert "tok-9f8e7d" not in line


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--token-file", "/nonexistent/token"], "cannot read token file"),
        (["--token-file", "TOKEN", "--ca-file", "/nonexistent/ca.pem"], "cannot load CA file"),
    ],
)
def test_agent_bad_settings_exit_2_with_one_line(
    tmp_path: Path, extra: list[str], words: str
) -> None:
    token = tmp_path / "token"
    token.write_text("t\n")
    argv = [str(token) if part == "TOKEN" else part for part in extra]
    log = io.StringIO()

    status = run_agent(_args("--dashboard", "https://dash.example", "--once", *argv), stream=log)

    assert status == 2
    (line,) = log.getvalue().splitlines()
    assert words in json.loads(line)["msg"]


def test_agent_dashboard_url_needs_a_scheme(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t\n")
    log = io.StringIO()

    status = run_agent(_args("--dashboard", "dash.example", "--token-file", str(token)), stream=log)

    assert status == 2
    assert "http(s) URL" in log.getvalue()


def test_agent_main_import_loads_no_heavy_modules() -> None:
    code = (
        "import sys, app.agent.main; "
        "print(sorted(m for m in ('pynvml', 'httpx', 'pydantic') if m in sys.modules))"
    )

    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert done.stdout.strip() == "[]"
