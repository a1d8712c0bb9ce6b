"""Agent -> dashboard -> /api/v1/nodes/{name}: the real agent code path against the real dashboard.

The GPUs come from a fake NVML and the processes from a /proc tree written here, with the
UID of a pod the simulated cluster really runs, so the dashboard must resolve it to that pod.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.agent.main import add_arguments
from app.agent.service import run_agent
from tests.agent.fake_nvml import MIB, FakeGpu, FakeNvml
from tests.conftest import AGENT_TOKEN, Stack

NODE = "gpu-server-1"
HOST_PID = 51000
POD_PID = 52000


def write_proc(root: Path, pid: int, *, cgroup: str, cmdline: str, uid: int) -> None:
    folder = root / str(pid)
    folder.mkdir(parents=True)
    (folder / "cgroup").write_text(cgroup + "\n")
    (folder / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode() + b"\0")
    (folder / "status").write_text(
        f"Name:\tpython\nPid:\t{pid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"
    )


def run_once(
    stack: Stack, tmp_path: Path, nvml: FakeNvml, *, token_text: str = AGENT_TOKEN
) -> tuple[int, str]:
    (tmp_path / "proc").mkdir(exist_ok=True)
    token = tmp_path / "token"
    token.write_text(token_text + "\n")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [
            "--dashboard",
            stack.dashboard_url,
            "--token-file",
            str(token),
            "--node",
            NODE,
            "--once",
            "--proc-root",
            str(tmp_path / "proc"),
        ]
    )
    log = io.StringIO()
    return run_agent(args, stream=log, nvml=nvml), log.getvalue()


def test_agent_once_report_shows_host_and_pod_process_apart_on_node_api(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack("host-split", agents=False)
    pod = stack.simulator.get("Pod", "notebook-0", namespace="ml")
    assert pod is not None
    pod_uid = pod["metadata"]["uid"]
    write_proc(
        tmp_path / "proc",
        HOST_PID,
        cgroup="0::/user.slice/user-0.slice/session-3.scope",
        cmdline="python train.py --epochs 90",
        uid=0,
    )
    write_proc(
        tmp_path / "proc",
        POD_PID,
        uid=1000,
        cmdline="python -m jupyterlab",
        cgroup="0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
        + pod_uid.replace("-", "_")
        + ".slice/cri-containerd-"
        + "ab" * 32
        + ".scope",
    )
    inventory = stack.simulator.inventories[NODE]
    uuids = [gpu.uuid for gpu in inventory.gpus]
    gpus = [FakeGpu(uuid=uuid, memory_used_bytes=0) for uuid in uuids]
    gpus[2] = FakeGpu(
        uuid=uuids[2],
        memory_used_bytes=40_000 * MIB,
        processes=[(HOST_PID, 30_000 * MIB), (POD_PID, 9_000 * MIB)],
    )

    status, log = run_once(stack, tmp_path, FakeNvml(gpus))

    assert status == 0, log

    def shared_gpu() -> dict[str, Any] | None:
        node = stack.client.get(f"/api/v1/nodes/{NODE}").json()["node"]
        gpu = next((g for g in node["gpus"] if g["uuid"] == uuids[2]), None)
        return gpu if gpu and len(gpu["processes"]) == 2 else None

    gpu: dict[str, Any] = stack.wait(shared_gpu, what="agent report on the node API")  # type: ignore[assignment]
    by_pid = {process["pid"]: process for process in gpu["processes"]}
    assert by_pid[HOST_PID]["owner"] == "host"
    assert by_pid[HOST_PID]["user"] == "root"
    assert by_pid[HOST_PID]["command"] == "python train.py --epochs 90"
    assert by_pid[POD_PID]["owner"] == "pod"
    assert by_pid[POD_PID]["pod"] == "ml/notebook-0"
    assert (gpu["memory_host_mib"], gpu["memory_pods_mib"]) == (30_000, 9_000)
    assert gpu["role"] == "advertised"
    assert "host" in " ".join(gpu["finding_codes"])


def test_agent_once_wrong_token_is_refused_by_dashboard_and_exits_nonzero(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack("host-split", agents=False)
    status, log = run_once(
        stack, tmp_path, FakeNvml([FakeGpu(uuid="GPU-x")]), token_text="not-the-token"
    )
    assert status != 0
    assert "401" in log
    assert stack.client.get(f"/api/v1/nodes/{NODE}").json()["node"]["agent"] is None
